"""Gemini's clients as the harness uses them: the agent's chat model (langchain-google-genai), the embedder
and DeepEval's judge (GeminiModel), at GOOGLE_GEMINI_BASE_URL when set.

Retries belong to live_calls.with_retries alone (at most 5 attempts, 60 s of waiting, Retry-After honoured),
so every client is built with its own retries off: ChatGoogleGenerativeAI `max_retries=1` (one attempt:
google-genai HttpRetryOptions(attempts=1)), google-genai clients with
`HttpOptions(retry_options=HttpRetryOptions(attempts=1))`, and the judge's `generate` replaced, which drops
the tenacity retry DeepEval wraps around GeminiModel.generate. Each attempt times out after call_timeout()
seconds, and no request is sent once the run is stopped or Gemini is taken as silent
(stopping.before_request, an httpx request hook). An answer with nothing to use raises (gemini_answers.py).
"""
from typing import Optional

from whichstage.providers.answers import chat_result_problem, parsed_answer, response_problem
from whichstage.providers.settings import call_timeout, google_api_key
from whichstage.calls.stopping import answered, before_request, client_options, reusing


def gemini_http_options(timeout_s: Optional[float] = None):
    """google-genai options for one attempt per call: a timeout (default call_timeout()), no retries of
    the SDK's own (attempts=1; leaving retry_options unset would also mean one attempt in google-genai 3.6,
    but ChatGoogleGenerativeAI sets 6 unless told, and a default may change), and on the sync client the
    harness calls, the run's request hooks (stopping.client_options: none sent once it is stopped)."""
    from google.genai import types

    timeout_ms = int((timeout_s or call_timeout()) * 1000)
    return types.HttpOptions(timeout=timeout_ms, retry_options=types.HttpRetryOptions(attempts=1),
                             client_args=client_options())


def _not_the_empty_response_warning(record) -> bool:
    """A logging filter: ChatGoogleGenerativeAI logs a multi-line warning before handing back an empty
    message; the harness raises a one-line error for it instead."""
    return not record.getMessage().startswith("Gemini produced an empty response")


def gemini_chat(name: str):
    """ChatGoogleGenerativeAI with one attempt per call (max_retries=1; 0 would mean the SDK's default of
    5), a timeout, no streaming, and a blocked or empty answer raised instead of returned as empty."""
    import logging

    from langchain_google_genai import ChatGoogleGenerativeAI

    logging.getLogger("langchain_google_genai.chat_models").addFilter(_not_the_empty_response_warning)

    class GeminiChat(ChatGoogleGenerativeAI):  # its client_args reach its async client too: hooks here,
        # and the transport alone in its client_args (it serves the sync client's requests, sends the async one's)
        def _generate(self, *args, **kwargs):
            before_request()
            result = super()._generate(*args, **kwargs)
            answered()
            problem = chat_result_problem(result)
            if problem:
                raise problem
            return result

        async def _agenerate(self, *args, **kwargs):
            before_request()
            result = await super()._agenerate(*args, **kwargs)
            answered()
            problem = chat_result_problem(result)
            if problem:
                raise problem
            return result

    # ignore: the fields taken by name (populate_by_name), where mypy reads pydantic's __init__ as taking
    # each field's alias (api_key, retries, request_timeout).
    return GeminiChat(model=name, temperature=0, google_api_key=google_api_key(),  # type: ignore[call-arg]
                      max_retries=1, timeout=call_timeout(), disable_streaming=True, client_args=reusing())


def gemini_embedder(name: str):
    """GoogleGenerativeAIEmbeddings, whose google-genai client is rebuilt with a timeout and one attempt: the
    class takes neither (its own client makes one attempt today, but would wait forever for an answer)."""
    from google import genai
    from langchain_google_genai import GoogleGenerativeAIEmbeddings

    key = google_api_key()
    # ignore: google_api_key by name, where mypy reads pydantic's __init__ as taking its alias (api_key)
    embeddings = GoogleGenerativeAIEmbeddings(model=name, google_api_key=key)  # type: ignore[call-arg]
    embeddings.client = genai.Client(api_key=key, http_options=gemini_http_options())
    return embeddings


def gemini_judge(name: str):
    """DeepEval's GeminiModel with one google-genai client (timeout, one attempt) and its own `generate`:
    DeepEval's is wrapped in a tenacity retry (and a per-attempt timeout thread), and returns None for a
    blocked answer or JSON that does not fit the schema, which DeepEval reports only as 'invalid JSON'.
    Returns the cost DeepEval computes from usageMetadata, with the token counts riding on it."""
    from deepeval.models import GeminiModel

    class GeminiJudge(GeminiModel):
        def generate(self, prompt, schema=None, audio=None):
            types = self._module.types
            structured = {"response_mime_type": "application/json", "response_schema": schema} if schema else {}
            config = types.GenerateContentConfig(safety_settings=self.model_safety_settings, **structured,
                                                 **self._temperature_kwargs(), **self.generation_kwargs)
            contents = self._prompt_contents(prompt, audio) if audio else prompt
            response = self.model.models.generate_content(model=self.name, contents=contents, config=config)
            problem = response_problem(response)
            if problem:
                raise problem
            text, cost = response.text or "", self._token_cost(response)
            if schema is None:
                return text, cost
            return parsed_answer(schema, text), cost

        async def a_generate(self, prompt, schema=None, audio=None):
            return self.generate(prompt, schema, audio)

        def load_model(self):  # once, at construction (DeepEvalBaseLLM keeps it as self.model)
            return self._build_client()

    return GeminiJudge(model=name, api_key=google_api_key(), temperature=0, http_options=gemini_http_options())


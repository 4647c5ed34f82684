"""OpenAI's clients as the harness uses them (`openai:MODEL` names): the agent's chat model (ChatOpenAI), the
embedder (OpenAIEmbeddings) and DeepEval's judge (OpenAIModel), with the key in OPENAI_API_KEY, at
OPENAI_BASE_URL when set (an OpenAI-compatible server too).

Retries belong to live_calls.with_retries alone, so every client makes one attempt (max_retries=0, and the
judge's `generate` replaced, which drops the tenacity retry DeepEval wraps around it), each timing out after
call_timeout() seconds, on an httpx2 client (the openai SDK's transport) carrying the run's request hooks
(stopping.client_options: no request once the run is stopped or OpenAI is taken as silent).
"""
import dataclasses

from whichstage.providers.answers import BlockedResponse, EmptyResponse, judge_cost, judged
from whichstage.providers.settings import call_timeout, hosted_key, hosted_url
from whichstage.calls.stopping import client_options


def http_clients(timeout_s=None) -> dict:
    """The openai SDK's sync client with the run's request hooks, and an async one with the timeout alone
    (an async client takes only async hooks; the harness calls the sync one)."""
    import httpx2

    timeout = timeout_s or call_timeout()
    return {"http_client": httpx2.Client(timeout=timeout, **client_options(httpx2)),
            "http_async_client": httpx2.AsyncClient(timeout=timeout)}


def connection(timeout_s=None) -> dict:
    """What every OpenAI client is built with: key, base URL, one attempt, a timeout, the httpx2 clients."""
    return {"api_key": hosted_key("openai")[1], "base_url": hosted_url("openai")[0], "max_retries": 0,
            "timeout": timeout_s or call_timeout(), **http_clients(timeout_s)}


def openai_chat(name: str):
    """ChatOpenAI on Chat Completions (never the Responses API, whose requests the stand-in does not speak),
    temperature 0, no streaming."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=name, temperature=0, use_responses_api=False, disable_streaming=True,
                      stream_usage=False, **connection())


def openai_embedder(name: str):
    """OpenAIEmbeddings sending the texts as they are (check_embedding_ctx_length=False: its length check
    would tokenise them with tiktoken, which downloads its encodings on first use), and asking for the vectors
    as JSON numbers, which every OpenAI-compatible server speaks (the SDK asks for base64 float32 unless told)."""
    from langchain_openai import OpenAIEmbeddings

    settings = connection()
    settings["request_timeout"] = settings.pop("timeout")
    return OpenAIEmbeddings(model=name, check_embedding_ctx_length=False, model_kwargs={"encoding_format": "float"},
                            **settings)


def response_format(judge, schema):
    """The response_format DeepEval's OpenAIModel would ask for: the schema itself where the model takes
    structured outputs, JSON mode where it takes that, else none (the prompt asks for JSON)."""
    if schema is None:
        return None
    if judge.supports_structured_outputs():
        from openai.lib._parsing._completions import type_to_response_format_param  # what .parse() sends

        return type_to_response_format_param(schema)
    return {"type": "json_object"} if judge.supports_json_mode() else None


def judge_request(judge, prompt: str, schema, audio=None) -> dict:
    """The Chat Completions request DeepEval's OpenAIModel `judge` makes for a prompt (a batch's line too)."""
    shape = response_format(judge, schema)
    return {"model": judge.name, "messages": [{"role": "user", "content": judge._prompt_content(prompt, audio)}],
            **({"response_format": shape} if shape else {}), **judge._temperature_kwargs(), **judge.generation_kwargs}


def answer_text(completion) -> str:
    """The answer's text; BlockedResponse for a refusal or a filtered answer, EmptyResponse for none."""
    if not completion.choices:
        raise EmptyResponse("OpenAI returned no choices: no answer")
    choice = completion.choices[0]
    if getattr(choice.message, "refusal", None):
        raise BlockedResponse(f"OpenAI refused to answer: {choice.message.refusal}")
    if choice.finish_reason == "content_filter":
        raise BlockedResponse("OpenAI withheld the answer (finish_reason content_filter)")
    if not (choice.message.content or "").strip():
        raise EmptyResponse(f"OpenAI returned an empty answer (finish_reason {choice.finish_reason})")
    return choice.message.content


def openai_judge(name: str):
    """DeepEval's OpenAIModel with one client (timeout, one attempt, the run's hooks) and its own `generate`:
    one request, the answer parsed into DeepEval's schema (InvalidJudgeAnswer otherwise), and the cost from
    DeepEval's OpenAI price table with the token counts riding on it (no cost where the table has no price)."""
    from deepeval.models import OpenAIModel
    from deepeval.models.utils import EvaluationCost

    class OpenAIJudge(OpenAIModel):
        def generate(self, prompt, schema=None, audio=None):
            completion = self.model.chat.completions.create(**judge_request(self, prompt, schema, audio))
            text, usage = answer_text(completion), completion.usage
            tokens = (usage.prompt_tokens, usage.completion_tokens) if usage else (None, None)
            cost = judge_cost(self.model_data, *tokens) if usage else EvaluationCost(None, *tokens)
            return judged(text, schema), cost

        async def a_generate(self, prompt, schema=None, audio=None):
            return self.generate(prompt, schema, audio)

        def load_model(self, async_mode: bool = False):  # once, at construction (kept as self.model)
            from openai import OpenAI

            return OpenAI(**{k: v for k, v in settings.items() if k != "http_async_client"})

    settings = connection()
    judge = OpenAIJudge(model=name, api_key=settings["api_key"], base_url=settings["base_url"], temperature=0)
    # GEval asks a model with log probabilities through generate_raw_response, which DeepEval retries itself;
    # without them it asks `generate`, as it asks every other judge here: one attempt, the same kind of score.
    judge.model_data = dataclasses.replace(judge.model_data, supports_log_probs=False)
    return judge

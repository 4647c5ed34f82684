"""Anthropic's clients as the harness uses them: the agent's chat model (langchain-anthropic's ChatAnthropic) and
DeepEval's judge (AnthropicModel), at ANTHROPIC_BASE_URL when set, with the key in ANTHROPIC_API_KEY. Anthropic
has no embeddings API: an `anthropic:` embedder is refused in one line (model_names.cannot_embed).

As on the Gemini path (gemini_clients.py), retries belong to live_calls.with_retries alone: every client is
built with `max_retries=0`, each attempt times out after call_timeout() seconds, and every request goes through
an httpx client built with stopping.client_options() (none sent once the run is stopped or the provider is
taken as silent). The judge makes one attempt per call (DeepEval's tenacity retry is dropped with its
`generate`), and an answer with nothing to use raises one line (gemini_answers.UnusableAnswer).
"""
from typing import Any, Callable, Optional, TypedDict

from whichstage.providers.answers import BlockedResponse, EmptyResponse, UnusableAnswer, judge_cost, judged
from whichstage.providers.names import model_of
from whichstage.providers.settings import call_timeout, hosted_key, hosted_url
from whichstage.calls.stopping import answered, before_request, client_options

def anthropic_key() -> str:
    return hosted_key("anthropic")[1]


async def _before_request(request) -> None:
    before_request(request)


async def _answered(response) -> None:
    answered(response)


class ClientOptions(TypedDict):
    """What both anthropic SDK clients are built with."""
    api_key: str
    base_url: str
    timeout: float
    max_retries: int


def anthropic_client(timeout_s: Optional[float] = None, async_mode: bool = False):
    """An anthropic SDK client making one attempt per call (max_retries=0) with a timeout, whose httpx client
    carries the run's request hooks (stopping.client_options; awaited on the async client)."""
    import anthropic
    import httpx2  # the SDK's HTTP module

    timeout = timeout_s or call_timeout()
    options = ClientOptions(api_key=anthropic_key(), base_url=hosted_url("anthropic")[0], timeout=timeout,
                            max_retries=0)
    if async_mode:
        hooks: dict[str, list[Callable[..., Any]]] = {"request": [_before_request], "response": [_answered]}
        return anthropic.AsyncAnthropic(**options, http_client=anthropic.DefaultAsyncHttpxClient(timeout=timeout,
                                                                                                  event_hooks=hooks))
    return anthropic.Anthropic(**options, http_client=anthropic.DefaultHttpxClient(timeout=timeout,
                                                                                   **client_options(httpx2)))


def unusable(stop_reason: Optional[str], has_answer: bool) -> Optional[UnusableAnswer]:
    """Why an Anthropic message holds nothing to use (a refusal, no text and no tool call), or None."""
    if stop_reason == "refusal":
        return BlockedResponse("Anthropic refused to answer (stop_reason refusal)")
    if not has_answer:
        return EmptyResponse(f"Anthropic returned an empty answer (stop_reason {stop_reason or 'none'})")
    return None


def anthropic_chat(name: str):
    """ChatAnthropic at temperature 0, no streaming, its clients anthropic_client()'s; a refusal or an empty
    answer raised instead of returned as an empty message."""
    from functools import cached_property

    from langchain_anthropic import ChatAnthropic

    class AnthropicChat(ChatAnthropic):
        @cached_property
        def _client(self):
            return anthropic_client()

        @cached_property
        def _async_client(self):
            return anthropic_client(async_mode=True)

        def _generate(self, *args, **kwargs):
            result = super()._generate(*args, **kwargs)
            for generation in result.generations:
                message = generation.message
                problem = unusable(message.response_metadata.get("stop_reason"),
                                   bool(message.tool_calls) or bool(message.text.strip()))
                if problem:
                    raise problem
            return result

    # ignore: ChatAnthropic's fields taken by name (populate_by_name), `api_key` as a str its SecretStr field
    # converts; mypy reads pydantic's __init__ as taking each field's alias, of the field's type.
    return AnthropicChat(model=model_of(name), temperature=0, max_retries=0,  # type: ignore[call-arg]
                         timeout=call_timeout(), api_key=anthropic_key(),  # type: ignore[arg-type]
                         base_url=hosted_url("anthropic")[0], disable_streaming=True)


def answer_text(message) -> str:
    """The message's first text block; UnusableAnswer when it holds none, or was refused."""
    text = next((block.text for block in message.content or [] if getattr(block, "type", "") == "text"), "")
    problem = unusable(message.stop_reason, bool(text.strip()))
    if problem:
        raise problem
    return text


def anthropic_judge(name: str):
    """DeepEval's AnthropicModel with one attempt per call and its own `generate`: DeepEval's is wrapped in a
    tenacity retry and answers a schema mismatch by asking again. Structured output (where DeepEval's table
    says the model has it) is parsed, or raised as one line; returns the cost with the token counts on it."""
    from deepeval.models import AnthropicModel

    class AnthropicJudge(AnthropicModel):
        def request(self, prompt, schema=None, audio=None) -> dict:
            """messages.create's arguments for a prompt (a message batch's `params` too)."""
            output_format = self._output_format(self._anthropic_module(), schema)
            request = self._create_kwargs(self._prompt_content(prompt, audio), output_format)
            if "temperature" in request:  # anthropic>=1 takes it only in the body (DeepEval 4 still passes it)
                request["extra_body"] = {"temperature": request.pop("temperature")}
            return request

        def generate(self, prompt, schema=None, audio=None):
            message = self.model.messages.create(**self.request(prompt, schema, audio))
            cost = judge_cost(self.model_data, message.usage.input_tokens, message.usage.output_tokens)
            return judged(answer_text(message), schema), cost

        async def a_generate(self, prompt, schema=None, audio=None):
            return self.generate(prompt, schema, audio)

        def load_model(self, async_mode: bool = False):  # once, at construction (kept as self.model)
            return anthropic_client()

    return AnthropicJudge(model=model_of(name), api_key=anthropic_key(), temperature=0)

"""Anthropic's Message Batches as `--live --batch` would use them for an Anthropic judge: the provider half of
batch.py's rounds (which today speak to Gemini's Batch API alone), at half the interactive price.

A round's judge requests go out as one batch (`messages.batches.create`, each request the interactive judge's
own `messages.create` arguments under a custom_id), `messages.batches.retrieve` polls it until it has ended,
and `messages.batches.results` streams each request's result, matched back by custom_id (the API promises no
order): its answer and tokens, or one line saying why it has none (errored, expired, canceled, refused).
Every call makes one attempt through the run's httpx hooks (anthropic_clients.anthropic_client); retrying and
journaling stay batch.py's.
"""
from typing import Callable, Optional

from whichstage.anthropic_clients import anthropic_client, anthropic_judge, answer_text, judge_cost, judged, \
    model_id
from whichstage.gemini_answers import UnusableAnswer
from whichstage.redact import outside_text

BATCH_DISCOUNT = 0.5  # Anthropic's published Message Batches price: half the interactive one


class AnthropicBatches:
    """One Anthropic judge model's batches: a request's params, create, whether a batch has ended, and each
    request's outcome as batch.py journals it ({"text", "tokens_in", "tokens_out"} or {"error"})."""

    def __init__(self, name: str):
        self.name, self.judge = name, anthropic_judge(name)
        self.client = anthropic_client(async_mode=True)

    def request(self, prompt: str, schema) -> dict:
        """A batch request's `params`: the interactive judge's request, its body-only fields in place."""
        request = self.judge.request(prompt, schema)
        return {**{k: v for k, v in request.items() if k != "extra_body"}, **request.get("extra_body", {})}

    async def create(self, requests: list[dict]) -> str:
        """Send the requests (in order: custom_id r0, r1, ...) as one batch; its id."""
        batch = await self.client.messages.batches.create(
            requests=[{"custom_id": f"r{i}", "params": params} for i, params in enumerate(requests)])
        return batch.id

    async def ended(self, batch_id: str) -> bool:
        """The batch has ended (every request succeeded, errored, expired or was canceled)."""
        return (await self.client.messages.batches.retrieve(batch_id)).processing_status == "ended"

    async def outcomes(self, batch_id: str, count: int) -> list[dict]:
        """Each of the batch's `count` requests' outcome, in the order they were sent."""
        results = {item.custom_id: item.result async for item in await self.client.messages.batches.results(batch_id)}
        return [outcome(outside_text(batch_id), results.get(f"r{i}"), i) for i in range(count)]

    async def aclose(self) -> None:
        await self.client.close()


def outcome(shown: str, result, i: int) -> dict:
    """One request's journal item (less its key): its answer and tokens, or its error, one line, scrubbed."""
    where = f"batch {shown}: request {i + 1}"
    if result is None:
        return {"error": f"{where} has no result"}
    if result.type == "errored":
        error = getattr(result.error, "error", None)
        said = f"{getattr(error, 'type', '')}: {outside_text(getattr(error, 'message', ''))[:200]}"
        return {"error": f"{where} failed: {said}"}
    if result.type != "succeeded":
        return {"error": f"{where} {result.type}"}
    try:
        text = answer_text(result.message)
    except UnusableAnswer as problem:
        return {"error": f"{where}: {problem}"}
    usage = result.message.usage
    return {"text": text, "tokens_in": usage.input_tokens, "tokens_out": usage.output_tokens}


def batch_judge(name: str, ask: Callable):
    """DeepEval's AnthropicModel whose a_generate awaits `ask(prompt, schema)` (batch.Rounds.ask: an outcome
    dict, or BatchFailed), costed at half DeepEval's price for the model (None where it has none)."""
    from deepeval.models.utils import EvaluationCost

    judge = anthropic_judge(name)

    class BatchJudge(type(judge)):
        def generate(self, prompt, schema=None, audio=None):
            raise RuntimeError("the batch judge answers on DeepEval's async path only")

        async def a_generate(self, prompt, schema=None, audio=None):
            answer = await ask(prompt, schema)
            full = judge_cost(self.model_data, answer["tokens_in"], answer["tokens_out"])
            cost: Optional[float] = None if full.value is None else BATCH_DISCOUNT * full.value
            return judged(answer["text"], schema), EvaluationCost(cost, answer["tokens_in"], answer["tokens_out"])

    return BatchJudge(model=model_id(name), api_key=judge.api_key.get_secret_value(), temperature=0)

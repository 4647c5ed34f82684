"""Anthropic's Message Batches as batch.py's provider: a round's requests as one batch
(`messages.batches.create`, each the interactive judge's own `messages.create` arguments under a custom_id),
polled with `messages.batches.retrieve` until it has ended, each request's result streamed from
`messages.batches.results` and matched back by custom_id (the API promises no order). The async client makes one
attempt per call through the run's httpx hooks (anthropic_clients.anthropic_client)."""
from typing import Optional

from whichstage.providers.anthropic import anthropic_client, anthropic_judge, anthropic_key, answer_text
from whichstage.providers.answers import UnusableAnswer
from whichstage._util.redact import outside_text


class AnthropicBatches:
    """Batches of an Anthropic judge `model` (the name Anthropic knows)."""

    def __init__(self, model: str):
        self.model, self.judge = model, anthropic_judge(model)
        self.client = anthropic_client(async_mode=True)

    def request(self, prompt: str, schema) -> dict:
        """A batch request's `params`: the interactive judge's request, its body-only fields in place."""
        request = self.judge.request(prompt, schema)
        return {**{k: v for k, v in request.items() if k != "extra_body"}, **request.get("extra_body", {})}

    async def create(self, requests: list[dict], label: str) -> str:
        """One batch of `requests` (custom_id r0, r1, ... in order); a batch carries no label."""
        batch = await self.client.messages.batches.create(
            requests=[{"custom_id": f"r{i}", "params": params} for i, params in enumerate(requests)])
        return batch.id

    async def get(self, batch_id: str):
        return await self.client.messages.batches.retrieve(batch_id)

    @staticmethod
    def state(job) -> Optional[str]:
        """"succeeded" once the batch has ended (each request then says its own outcome, expired or canceled
        included), None while it runs."""
        return "succeeded" if job.processing_status == "ended" else None

    async def results(self, job, count: int, shown: str) -> list[Optional[dict]]:
        """Each request's answer and tokens, or its error, scrubbed, by its custom_id; None where the results
        hold neither."""
        found = {item.custom_id: item.result async for item in await self.client.messages.batches.results(job.id)}
        return [outcome(shown, found[f"r{i}"], i) if f"r{i}" in found else None for i in range(count)]

    def judge_class(self) -> tuple[type, dict]:
        """DeepEval's model class for this judge, and what it is built with."""
        from deepeval.models import AnthropicModel

        return AnthropicModel, {"model": self.model, "api_key": anthropic_key(), "temperature": 0}

    async def close(self) -> None:
        """This loop's connections closed; the next phase's loop gets a new client."""
        await self.client.close()
        self.client = anthropic_client(async_mode=True)


def outcome(shown: str, result, i: int) -> dict:
    """One request's answer and tokens, or its error (errored, expired, canceled, refused), one line, scrubbed."""
    where = f"batch {shown}: request {i + 1}"
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

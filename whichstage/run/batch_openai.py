"""OpenAI's Batch API as batch.py's provider: a round's requests as a JSONL file (`files.create`, purpose
batch), one batch on it (`batches.create`, /v1/chat/completions, 24 h window), polled with `batches.retrieve`,
each answer read from its output file (and each failed request from its error file). The requests are the ones
the interactive judge makes (openai_clients.judge_request); the async client makes one attempt per call."""
import json
from typing import Optional

from whichstage.providers.answers import UnusableAnswer
from whichstage.providers.openai import answer_text, connection, judge_request, openai_judge
from whichstage._util.redact import outside_text

DONE = {"completed": "succeeded", "failed": "failed", "expired": "expired", "cancelled": "cancelled"}
ENDPOINT = "/v1/chat/completions"


class OpenAIBatches:
    """Batches of an OpenAI judge `model` (the name OpenAI knows)."""

    def __init__(self, model: str):
        self.model, self.judge = model, openai_judge(model)
        self.client = self.new_client()

    @staticmethod
    def new_client():
        """An async client: a round's calls run on an event loop, each phase of a run on its own."""
        from openai import AsyncOpenAI

        settings = connection()
        settings["http_client"] = settings.pop("http_async_client")
        return AsyncOpenAI(**settings)

    def request(self, prompt: str, schema) -> dict:
        """One line of the batch's input file, less its custom_id."""
        return {"method": "POST", "url": ENDPOINT, "body": judge_request(self.judge, prompt, schema)}

    async def create(self, requests: list[dict], label: str) -> str:
        lines = "".join(json.dumps({"custom_id": f"request-{i}", **r}) + "\n" for i, r in enumerate(requests))
        uploaded = await self.client.files.create(file=(f"{label.replace(' ', '-')}.jsonl", lines.encode(),
                                                        "application/jsonl"), purpose="batch")
        job = await self.client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h",
                                               metadata={"description": label})
        return job.id

    async def get(self, name: str):
        return await self.client.batches.retrieve(name)

    @staticmethod
    def state(job) -> Optional[str]:
        """How the job ended ("succeeded", "failed", "expired", "cancelled"), or None while it runs."""
        return DONE.get(job.status)

    async def results(self, job, count: int, shown: str) -> list[Optional[dict]]:
        """Each request's answer and tokens, or its error, scrubbed, by its custom_id; None where neither file
        holds it."""
        lines: dict[str, dict] = {}
        for file_id in (job.error_file_id, job.output_file_id):
            if file_id:
                text = (await self.client.files.content(file_id)).text
                lines.update({item["custom_id"]: item for item in map(json.loads, text.splitlines()) if item})
        return [self.outcome(shown, lines[f"request-{i}"], i) if f"request-{i}" in lines else None
                for i in range(count)]

    @staticmethod
    def outcome(shown: str, line: dict, i: int) -> dict:
        from openai.types.chat import ChatCompletion

        response, error = line.get("response") or {}, line.get("error")
        if error or response.get("status_code") != 200:
            body = (response.get("body") or {}).get("error") or error or {}
            message = outside_text(body.get("message", ""))[:200]
            return {"error": f"batch {shown}: request {i + 1} failed: {response.get('status_code', '')} {message}"}
        completion = ChatCompletion.model_validate(response["body"])
        try:
            text = answer_text(completion)
        except UnusableAnswer as problem:
            return {"error": f"batch {shown}: request {i + 1}: {problem}"}
        usage = completion.usage
        return {"text": text, "tokens_in": usage.prompt_tokens if usage else 0,
                "tokens_out": usage.completion_tokens if usage else 0}

    def judge_class(self) -> tuple[type, dict]:
        """DeepEval's model class for this judge, and what it is built with."""
        from deepeval.models import OpenAIModel

        return OpenAIModel, {"model": self.model, "api_key": str(self.client.api_key),
                             "base_url": str(self.client.base_url), "temperature": 0}

    async def close(self) -> None:
        """This loop's connections closed; the next phase's loop gets a new client."""
        await self.client.close()
        self.client = self.new_client()

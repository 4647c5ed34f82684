"""The Gemini Batch API as batch.py's provider: a round's requests inline in one `batches.create`, polled with
`batches.get`, each answer read from the job's inlined responses (google-genai's async client, one attempt per
call, as every Gemini client here)."""
from typing import TYPE_CHECKING, Optional, cast

from whichstage._util.redact import outside_text

if TYPE_CHECKING:
    from google.genai.types import GenerateContentConfigDict, InlinedRequestDict

DONE = {"JOB_STATE_SUCCEEDED": "succeeded", "JOB_STATE_FAILED": "failed", "JOB_STATE_EXPIRED": "expired",
        "JOB_STATE_CANCELLED": "cancelled"}


class GeminiBatches:
    """Batches of a Gemini judge `model` (the name Gemini knows)."""

    def __init__(self, model: str):
        from google import genai

        from whichstage.providers.gemini import gemini_http_options
        from whichstage.providers.settings import google_api_key

        self.model = model
        self.client = genai.Client(api_key=google_api_key(), http_options=gemini_http_options())

    def request(self, prompt: str, schema) -> "InlinedRequestDict":
        """One judge request, as generateContent would ask it."""
        config: "GenerateContentConfigDict" = {
            "temperature": 0, **({"response_mime_type": "application/json", "response_schema": schema}
                                 if schema is not None else {})}
        return {"contents": [{"role": "user", "parts": [{"text": prompt}]}], "config": config}

    async def create(self, requests: list["InlinedRequestDict"], label: str) -> str:
        job = await self.client.aio.batches.create(model=self.model, src=requests, config={"display_name": label})
        return cast(str, job.name)  # google-genai types every field Optional; the server names the job it created

    async def get(self, name: str):
        return await self.client.aio.batches.get(name=name)

    @staticmethod
    def state(job) -> Optional[str]:
        """How the job ended ("succeeded", "failed", "expired", "cancelled"), or None while it runs."""
        return DONE.get(getattr(job.state, "name", str(job.state)))

    async def results(self, job, count: int, shown: str) -> list[Optional[dict]]:
        """Each request's answer and tokens, or its error, scrubbed; None where the job holds no answer."""
        answers = list(getattr(getattr(job, "dest", None), "inlined_responses", None) or [])
        return [self.outcome(shown, answers[i], i) if i < len(answers) and answers[i] is not None else None
                for i in range(count)]

    @staticmethod
    def outcome(shown: str, answer, i: int) -> dict:
        if answer.error is not None:
            message = outside_text(answer.error.message or "")[:200]
            return {"error": f"batch {shown}: request {i + 1} failed: {answer.error.code} {message}"}
        from whichstage.providers.answers import response_problem

        problem = response_problem(answer.response)
        if problem:
            return {"error": f"batch {shown}: request {i + 1}: {problem}"}
        usage = answer.response.usage_metadata
        return {"text": answer.response.text or "", "tokens_in": getattr(usage, "prompt_token_count", None) or 0,
                "tokens_out": getattr(usage, "candidates_token_count", None) or 0}

    def judge_class(self) -> tuple[type, dict]:
        """DeepEval's model class for this judge, and what it is built with."""
        from deepeval.models import GeminiModel

        from whichstage.providers.settings import google_api_key

        return GeminiModel, {"model": self.model, "api_key": google_api_key(), "temperature": 0}

    async def close(self) -> None:
        await self.client.aio.aclose()

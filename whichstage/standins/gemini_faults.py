"""Fault injection for the Gemini stand-in: how a model misbehaves for requests carrying a marker (an HTTP
error, a blocked, withheld or empty answer, JSON cut off, a key echoed; in a batch, a job refused, failed,
expired, never ending, or polls answered with errors or a reset), and how many times it does."""
import threading
from dataclasses import dataclass
from typing import Mapping, Optional

from whichstage.standins.gemini_wire import error_body, usage

MESSAGES = {429: "Resource has been exhausted (e.g. check quota).",
            500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
            503: "The model is overloaded. Please try again later."}
JOB_KINDS = ("batch-failed", "batch-expired", "never-ends")  # a whole batch job ends so, or never
CREATE_KINDS = ("create-429",)  # batchGenerateContent answers so
POLL_KINDS = ("poll-429", "poll-500", "poll-reset")  # a get of the job answers so
WHERE = {**dict.fromkeys(JOB_KINDS, "run"), **dict.fromkeys(CREATE_KINDS, "create"),
         **dict.fromkeys(POLL_KINDS, "poll")}  # any other kind: each request, where it is answered
KINDS = ("429", "500", "503", "blocked", "safety", "no-candidates", "bad-json", "key-echo") + JOB_KINDS \
    + CREATE_KINDS + POLL_KINDS
JOB_ERRORS = {"batch-failed": (500, "stand-in: the batch job failed."),
              "batch-expired": (504, "stand-in: the batch job expired before it ran.")}


@dataclass(frozen=True)
class Fault:
    """How a model misbehaves: `kind` is "429" (with a Retry-After header of `retry_after` seconds), "500",
    "503", "blocked" (promptFeedback.blockReason SAFETY, no candidates), "safety" (a candidate with
    finishReason SAFETY and no content), "no-candidates" (neither candidates nor a block reason) or
    "bad-json" (a judge answer cut off mid-JSON) or "key-echo" (a 400 whose message echoes the API key the
    request came with, as a server may quote what it refused). The HTTP faults apply to every endpoint, the
    others to generateContent. In a batch job each inline request meets its fault as generateContent would,
    an HTTP fault becoming that request's inline `error`. Only in a batch, for a job holding a matching
    request: "batch-failed" / "batch-expired" end the whole job FAILED / EXPIRED, with no responses;
    "never-ends" keeps it RUNNING on every get; "create-429" answers its batchGenerateContent 429 (with
    Retry-After); "poll-429", "poll-500" answer a get of it so and "poll-reset" resets the connection of a
    get (no answer at all). `times`: only the first N matching requests (for a job-level fault, jobs; for a
    create or poll fault, those calls); None: all of them."""
    kind: str
    times: Optional[int] = None
    retry_after: float = 1.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; valid: {', '.join(KINDS)}")


class Faults:
    """The faults each model shows, by marker, and how many times each has fired (a Fault's `times`)."""

    def __init__(self, faults: Mapping[str, Mapping[str, Fault]]):
        self.by_model = {model: dict(by_marker) for model, by_marker in faults.items()}
        self.fired: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()

    def fault_for(self, model: str, text: str, where: str = "request") -> tuple[Optional[Fault], str]:
        """The fault this request triggers, if any, with its marker; counts it against `times`. `where`: a
        batch job's faults when it is created, polled or run (WHERE), else each request's."""
        for marker, fault in self.by_model.get(model, {}).items():
            if marker in text and WHERE.get(fault.kind, "request") == where:
                with self.lock:
                    fired = self.fired.get((model, marker), 0)
                    if fault.times is not None and fired >= fault.times:
                        return None, marker
                    self.fired[(model, marker)] = fired + 1
                return fault, marker
        return None, ""


def http_fault(fault: Optional[Fault], api_key: str) -> Optional[tuple[int, dict, Optional[dict]]]:
    """The HTTP error a request's fault answers it with (status, body, headers), or None to answer it."""
    if fault and fault.kind == "key-echo":
        return 400, error_body(400, f"stand-in: refused the request made with key {api_key}"), None
    if fault and fault.kind.isdigit():
        status = int(fault.kind)
        headers = {"Retry-After": f"{fault.retry_after:g}"} if status == 429 else None
        return status, error_body(status, MESSAGES[status]), headers
    return None


def shaped(model: str, parts: list[dict], tokens_in: int, tokens_out: int, fault: Optional[Fault]) -> dict:
    """A GenerateContentResponse, or the blocked / withheld / empty one a fault asks for."""
    done = {"usageMetadata": usage(tokens_in, tokens_out), "modelVersion": model, "responseId": "stand-in"}
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
    if fault and fault.kind == "blocked":
        return {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": ratings},
                **done, "usageMetadata": usage(tokens_in, 0)}
    if fault and fault.kind == "no-candidates":
        return {**done, "usageMetadata": usage(tokens_in, 0)}
    if fault and fault.kind == "safety":
        return {"candidates": [{"finishReason": "SAFETY", "index": 0, "safetyRatings": ratings}],
                **done, "usageMetadata": usage(tokens_in, 0)}
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            **done}

"""The Gemini stand-in's Batch API (google-genai `batches.create(model=M, src=[inline requests])`,
`batches.get/cancel/delete`); its faults are gemini_faults.py's.

`POST /v1/models/M:batchGenerateContent` queues a job and answers its Operation, `name` "batches/ID",
`metadata.state` BATCH_STATE_PENDING (google-genai reads it as JOB_STATE_PENDING); `GET /v1/batches/ID`
answers BATCH_STATE_RUNNING for the first `batch_polls` gets (and until `batch_seconds` have passed), then
the end state: SUCCEEDED with `metadata.output.inlinedResponses.inlinedResponses`, one per request in
order, each `{"response": GenerateContentResponse}` (answered as generateContent answers it, usageMetadata
and all) or `{"error": {code, message, status}}`, with the request's `metadata`; or FAILED / EXPIRED (a
job-level fault). `POST /v1/batches/ID:cancel` ends a running job CANCELLED; `DELETE` forgets it. Jobs
live in the StandIn, so any client (a new one, another process) gets a job by name for as long as the stand-in runs.
"""
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Optional

from whichstage.standins.gemini_faults import JOB_ERRORS, MESSAGES
from whichstage.standins.gemini_wire import error_body, is_embedder, last_user_text

ENDED = ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_EXPIRED", "BATCH_STATE_CANCELLED")


@dataclass
class Job:
    """A batch job as the stand-in keeps it: its inline requests (each {"request": ..., "metadata": ...}),
    how many gets it has had, and once ended its state and the inlinedResponses (or the error) it ended with."""
    name: str
    model: str
    display_name: str
    requests: list
    created: float
    state: str = "BATCH_STATE_PENDING"
    gets: int = 0
    responses: Optional[list] = None
    error: Optional[dict] = None
    ended: Optional[float] = None
    stuck: bool = False  # a "never-ends" job: running on every get while this holds
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def operation(job: Job) -> dict:
    """The job as the Gemini API answers a batch: an Operation whose metadata is the GenerateContentBatch
    (google-genai reads `metadata.state` and `metadata.output.inlinedResponses.inlinedResponses`)."""
    responses = job.responses or []
    failed = sum("error" in r for r in responses)
    meta = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "name": job.name, "model": f"models/{job.model}", "createTime": stamp(job.created),
            "updateTime": stamp(job.ended or time.time()), "state": job.state,
            "batchStats": {"requestCount": str(len(job.requests)),
                           "pendingRequestCount": str(0 if job.state in ENDED else len(job.requests)),
                           "successfulRequestCount": str(len(responses) - failed),
                           "failedRequestCount": str(failed)}}
    if job.display_name:
        meta["displayName"] = job.display_name
    out: dict = {"name": job.name, "metadata": meta}
    if job.state in ENDED:
        out["done"] = True
        meta["endTime"] = stamp(job.ended or time.time())
    if job.responses is not None:
        meta["output"] = {"inlinedResponses": {"inlinedResponses": responses}}
        kind = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput"
        out["response"] = {"@type": kind,
                           "inlinedResponses": {"inlinedResponses": responses}}
    if job.error:
        out["error"] = job.error
    return out


def job_text(requests: list) -> str:
    """The last user text of each inline request of a job, one a line: what its faults' markers are sought in."""
    return "\n".join(last_user_text((item.get("request") or {}).get("contents") or []) for item in requests)


if TYPE_CHECKING:  # mixed into gemini.Handler: to a type checker, a request handler
    from whichstage.standins.ollama import QuietHandler as RoutesBase
else:
    RoutesBase = object


class BatchRoutes(RoutesBase):
    """The Batch API's routes of the stand-in's request handler (gemini.Handler): create, get, cancel, delete.
    A job runs on the get that finds it due, each inline request answered as generateContent answers it."""
    if TYPE_CHECKING:  # gemini.Handler's own
        def reply(self, status: int, body: Any, headers: Optional[dict] = None, **record: Any) -> None: ...
        def reset(self, **record: Any) -> None: ...
        def generate(self, model: str, body: dict) -> tuple: ...
        def outcome(self, model: str, kind: str, text: str,
                    respond: Callable[..., Any]) -> tuple[int, dict, Optional[dict], dict]: ...

    def batch_create(self, model: str, body: dict) -> None:
        """Queue a batch job of inline requests; nothing is answered until a get finds the job due."""
        standin = self.server.standin
        batch = body.get("batch") or {}
        requests = ((batch.get("inputConfig") or {}).get("requests") or {}).get("requests")
        record: dict[str, Any] = {"model": model, "kind": "batch-create"}  # the log record's fields
        if is_embedder(model):
            return self.reply(400, error_body(400, f"models/{model} does not support batchGenerateContent"),
                              **record)
        if not isinstance(requests, list) or not requests or not all(isinstance(r, dict) for r in requests):
            return self.reply(400, error_body(400, "stand-in: a batch needs inputConfig.requests.requests, a "
                                                   "non-empty list of inline requests (no file input)"), **record)
        fault, marker = standin.faults.fault_for(model, job_text(requests), "create")
        if fault:
            return self.reply(429, error_body(429, MESSAGES[429]), {"Retry-After": f"{fault.retry_after:g}"},
                              fault=fault.kind, marker=marker, **record)
        with standin.lock:
            job = Job(f"batches/standin-{next(standin.job_ids)}", model, batch.get("displayName") or "",
                      requests, time.time())
            standin.jobs[job.name] = job
        self.reply(200, operation(job), batch=job.name, requests=len(requests), state=job.state, **record)

    def batch_get(self, name: str) -> None:
        """The job's state: running until it has had `batch_polls` gets and `batch_seconds` have passed,
        then run (once) and ended; or the poll fault its requests call for."""
        standin = self.server.standin
        job = standin.jobs.get(name)
        if job is None:
            return self.reply(404, error_body(404, "Requested entity was not found."), kind="batch-get", batch=name)
        polled, marker = standin.faults.fault_for(job.model, job_text(job.requests), "poll")
        if polled:
            record = {"model": job.model, "kind": "batch-get", "batch": name, "fault": polled.kind, "marker": marker}
            if polled.kind == "poll-reset":
                return self.reset(**record)
            status = int(polled.kind.removeprefix("poll-"))
            headers = {"Retry-After": f"{polled.retry_after:g}"} if status == 429 else None
            return self.reply(status, error_body(status, MESSAGES[status]), headers, **record)
        fault: dict[str, Any] = {"fault": "", "marker": ""}  # the log record's fields
        with job.lock:
            job.gets += 1
            if job.state not in ENDED:
                due = job.gets > standin.batch_polls and time.time() - job.created >= standin.batch_seconds \
                    and not job.stuck
                if due:
                    fault = self.run_job(job)
                else:
                    job.state = "BATCH_STATE_RUNNING"
            body, state = operation(job), job.state
        self.reply(200, body, model=job.model, kind="batch-get", batch=name, state=state, **fault)

    def run_job(self, job: Job) -> dict:
        """End the job: FAILED / EXPIRED for a job-level fault, else SUCCEEDED with each inline request
        answered (and logged) as generateContent would answer it, in order."""
        standin = self.server.standin
        bodies = [item.get("request") or {} for item in job.requests]
        fault, marker = standin.faults.fault_for(job.model, job_text(job.requests), "run")
        if fault and fault.kind == "never-ends":
            job.state, job.stuck = "BATCH_STATE_RUNNING", True
            return {"fault": fault.kind, "marker": marker}
        job.ended = time.time()
        if fault:
            job.state = "BATCH_STATE_FAILED" if fault.kind == "batch-failed" else "BATCH_STATE_EXPIRED"
            code, message = JOB_ERRORS[fault.kind]
            job.error = error_body(code, message)["error"]
            return {"fault": fault.kind, "marker": marker}
        responses = []
        for index, (item, body) in enumerate(zip(job.requests, bodies, strict=False)):
            status, answer, _, record = self.outcome(job.model, *self.generate(job.model, body))
            standin.log(method="", path=job.name, status=status, batch=job.name, index=index, **record)
            inline = {"response": answer} if status == 200 else {"error": answer["error"]}
            if item.get("metadata") is not None:
                inline["metadata"] = item["metadata"]
            responses.append(inline)
        job.responses, job.state = responses, "BATCH_STATE_SUCCEEDED"
        return {"fault": "", "marker": ""}

    def batch_end(self, name: str, how: str) -> None:
        """Cancel a job (a running one ends CANCELLED, an ended one stays as it is) or delete it."""
        standin = self.server.standin
        job = standin.jobs.get(name)
        if job is None:
            return self.reply(404, error_body(404, "Requested entity was not found."), kind=f"batch-{how}",
                              batch=name)
        with job.lock:
            if how == "delete":
                with standin.lock:
                    standin.jobs.pop(name, None)
            elif job.state not in ENDED:
                job.state, job.ended = "BATCH_STATE_CANCELLED", time.time()
            state = job.state
        self.reply(200, {}, model=job.model, kind=f"batch-{how}", batch=name, state=state)

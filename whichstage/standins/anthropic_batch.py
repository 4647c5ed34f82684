"""The Anthropic stand-in's Message Batches API (anthropic `messages.batches.create(requests=[{custom_id,
params}])`, `.retrieve(id)`, `.results(id)`); its faults are the stand-in's (standins/anthropic.py).

`POST /v1/messages/batches` queues a batch and answers it `in_progress`; `GET /v1/messages/batches/ID` answers
`in_progress` for the first `batch_polls` gets, then runs it (each request answered as /v1/messages answers
it, and logged so) and answers `ended` with its `request_counts` and `results_url`; `GET .../ID/results` is
the results file, one JSON line per request, `succeeded` (its message), `errored` (its error) or `expired`,
in reverse order of the requests, since the API promises no order (a client matches them by custom_id).
"""
import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from whichstage.standins.anthropic_wire import error_body, last_user_text

RESULT_TYPES = ("succeeded", "errored", "canceled", "expired")
CREATED = "2025-01-01T00:00:00Z"


@dataclass
class Batch:
    """A batch as the stand-in keeps it: its requests ({custom_id, params}), its gets, and once ended each
    request's result, in the requests' order."""
    id: str
    requests: list
    gets: int = 0
    results: Optional[list] = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def batch_text(batch: Batch) -> str:
    """The text of every request's messages, one a line: what a batch-level fault's marker is sought in."""
    return "\n".join(last_user_text((r.get("params") or {}).get("messages") or []) for r in batch.requests)


def message_batch(batch: Batch, url: str) -> dict:
    """The batch as the API answers it (a MessageBatch)."""
    counts = dict.fromkeys(("processing", *RESULT_TYPES), 0)
    for result in batch.results or []:
        counts[result["result"]["type"]] += 1
    counts["processing"] = 0 if batch.results is not None else len(batch.requests)
    ended = batch.results is not None
    return {"id": batch.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts, "created_at": CREATED, "expires_at": "2025-01-02T00:00:00Z",
            "ended_at": CREATED if ended else None, "cancel_initiated_at": None, "archived_at": None,
            "results_url": f"{url}/v1/messages/batches/{batch.id}/results" if ended else None}


if TYPE_CHECKING:  # mixed into anthropic.Handler: to a type checker, a request handler
    from whichstage.standins.ollama import QuietHandler as RoutesBase
else:
    RoutesBase = object


class BatchRoutes(RoutesBase):
    """The Message Batches routes of the stand-in's request handler (anthropic.Handler)."""
    if TYPE_CHECKING:  # anthropic.Handler's own
        def reply(self, status: int, body: Any, headers: Optional[dict] = None, **record: Any) -> None: ...
        def served(self, model: str) -> bool: ...
        def outcome(self, body: dict) -> tuple[int, dict, Optional[dict], dict]: ...

    def batch_create(self, body: dict) -> None:
        standin = self.server.standin
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests or not all(
                isinstance(r, dict) and r.get("custom_id") and isinstance(r.get("params"), dict) for r in requests):
            return self.reply(400, error_body(400, "requests: a non-empty list of {custom_id, params}"),
                              kind="batch-create")
        if not all(self.served(r["params"].get("model", "")) for r in requests[:1]):
            return None
        with standin.lock:
            batch = Batch(f"msgbatch_standin_{next(standin.ids)}", requests)
            standin.jobs[batch.id] = batch
        self.reply(200, message_batch(batch, standin.url), kind="batch-create", batch=batch.id,
                   requests=len(requests))

    def batched(self, batch_id: str) -> Optional[Batch]:
        batch = self.server.standin.jobs.get(batch_id)
        if batch is None:
            self.reply(404, error_body(404, f"message batch {batch_id} not found"), kind="batch-get",
                       batch=batch_id)
        return batch

    def batch_get(self, batch_id: str) -> None:
        """The batch: in progress for its first `batch_polls` gets, then run (once) and ended."""
        standin, batch = self.server.standin, self.batched(batch_id)
        if batch is None:
            return
        with batch.lock:
            batch.gets += 1
            if batch.results is None and batch.gets > standin.batch_polls:
                self.run_batch(batch)
            body = message_batch(batch, standin.url)
        self.reply(200, body, kind="batch-get", batch=batch_id, state=body["processing_status"])

    def run_batch(self, batch: Batch) -> None:
        """Answer every request as /v1/messages would (each logged so), or expire them all (a batch fault)."""
        standin = self.server.standin
        model = (batch.requests[0].get("params") or {}).get("model", "")
        expired, _ = standin.faults.fault_for(model, batch_text(batch), "run")
        results = []
        for index, request in enumerate(batch.requests):
            if expired:
                results.append({"custom_id": request["custom_id"], "result": {"type": "expired"}})
                continue
            status, answer, _, record = self.outcome(request["params"])
            standin.log(method="", path=batch.id, status=status, batch=batch.id, index=index, **record)
            result = {"type": "succeeded", "message": answer} if status == 200 else \
                {"type": "errored", "error": answer or error_body(500, "no answer")}
            results.append({"custom_id": request["custom_id"], "result": result})
        batch.results = results

    def batch_results(self, batch_id: str) -> None:
        batch = self.batched(batch_id)
        if batch is None:
            return
        if batch.results is None:
            return self.reply(400, error_body(400, f"message batch {batch_id} has not ended"),
                              kind="batch-results", batch=batch_id)
        data = "".join(json.dumps(r) + "\n" for r in reversed(batch.results)).encode()
        self.server.standin.log(method=self.command, path=self.path, status=200, model="", kind="batch-results",
                                fault="", marker="", batch=batch_id)
        self.send_response(200)
        self.send_header("Content-Type", "application/binary")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

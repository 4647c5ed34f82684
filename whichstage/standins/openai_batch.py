"""The OpenAI stand-in's Files and Batch APIs: `POST /v1/files` (multipart, purpose batch), `POST /v1/batches`,
`GET /v1/batches/ID` and `GET /v1/files/ID/content`. A batch stays in_progress for its first `batch_polls`
gets; the get after that runs each line of its input file as /v1/chat/completions would answer it (a request's
HTTP fault becomes a line of its error file) and answers it completed, or expired / failed when a line meets a
"batch-expired" / "batch-failed" fault. Each line is logged once run, with `batch` the job's id and `index`."""
import json
from email.parser import BytesParser
from email.policy import default
from typing import TYPE_CHECKING, Any, Optional, cast

from whichstage.offline import lexical_judge
from whichstage.standins.openai_wire import MESSAGES, error_body, is_judge, last_user_text

ENDED = {"batch-expired": "expired", "batch-failed": "failed"}


def batch_body(job: dict) -> dict:
    """What GET /v1/batches/ID answers."""
    return {"object": "batch", "endpoint": "/v1/chat/completions", "errors": None, "completion_window": "24h",
            "created_at": 1767225600, "metadata": job.get("metadata"), **{k: job[k] for k in (
                "id", "input_file_id", "status", "output_file_id", "error_file_id", "request_counts")}}


if TYPE_CHECKING:  # mixed into openai.Handler: to a type checker, a request handler
    from whichstage.standins.ollama import QuietHandler as RoutesBase
else:
    RoutesBase = object


class BatchRoutes(RoutesBase):
    """The Handler's file and batch routes (standins/openai.py), on its StandIn's `files` and `jobs`."""
    if TYPE_CHECKING:  # openai.Handler's own
        def reply(self, status: int, body: Any, headers: Optional[dict] = None, raw: bool = False,
                  **record: Any) -> None: ...
        def judge(self, model: str, body: dict) -> dict: ...
        def rules(self, model: str, body: dict) -> dict: ...

    def new_file(self, data: bytes, name: str) -> dict:
        standin = self.server.standin
        with standin.lock:
            file_id = f"file-{len(standin.files) + 1}"
            standin.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": 1767225600, "filename": name,
                "purpose": "batch", "status": "processed"}

    def upload(self, raw: bytes) -> None:
        form = BytesParser(policy=default).parsebytes(
            f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode() + raw)
        parts = {p.get_param("name", header="content-disposition"): p for p in form.iter_parts()}
        if "file" not in parts:
            return self.reply(400, error_body(400, "stand-in: no file in the upload"))
        data = cast(bytes, parts["file"].get_payload(decode=True))  # a part that is no multipart: its bytes
        self.reply(200, self.new_file(data, parts["file"].get_filename() or ""), kind="file-upload")

    def file_content(self, file_id: str) -> None:
        data = self.server.standin.files.get(file_id)
        if data is None:
            return self.reply(404, error_body(404, f"No such File object: {file_id}"))
        self.reply(200, data, kind="file-content", raw=True)

    def batch_create(self, body: dict) -> None:
        standin = self.server.standin
        if body.get("input_file_id") not in standin.files:
            return self.reply(400, error_body(400, "stand-in: no such input file"))
        lines = [json.loads(line) for line in standin.files[body["input_file_id"]].decode().splitlines() if line]
        with standin.lock:
            job = {"id": f"batch_{len(standin.jobs) + 1}", "input_file_id": body["input_file_id"], "lines": lines,
                   "status": "validating", "output_file_id": None, "error_file_id": None, "gets": 0,
                   "metadata": body.get("metadata"), "request_counts": {"total": len(lines), "completed": 0,
                                                                        "failed": 0}}
            standin.jobs[job["id"]] = job
        self.reply(200, batch_body(job), kind="batch-create", batch=job["id"], requests=len(lines))

    def batch_get(self, batch_id: str) -> None:
        standin = self.server.standin
        job = standin.jobs.get(batch_id)
        if job is None:
            return self.reply(404, error_body(404, f"No batch found with id '{batch_id}'."), kind="batch-get")
        job["gets"] += 1
        if job["status"] in ("validating", "in_progress"):
            job["status"] = "in_progress" if job["gets"] <= standin.batch_polls else self.run(job)
        self.reply(200, batch_body(job), kind="batch-get", batch=batch_id, state=job["status"])

    def run(self, job: dict) -> str:
        """Answer every line of the job; how the job ended."""
        faults = self.server.standin.faults
        for line in job["lines"]:
            body = line["body"]
            fault, _ = faults.fault_for(body.get("model", ""), last_user_text(body.get("messages") or []), "run")
            if fault:
                return ENDED[fault.kind]
        answered: list[str] = []
        failed: list[str] = []
        for index, line in enumerate(job["lines"]):
            status, body = self.line_answer(line["body"], job["id"], index)
            (answered if status == 200 else failed).append(json.dumps({
                "id": f"batch_req_{index}", "custom_id": line["custom_id"], "error": None,
                "response": {"status_code": status, "request_id": f"req_{index}", "body": body}}) + "\n")
        for kind, found in (("output_file_id", answered), ("error_file_id", failed)):
            job[kind] = self.new_file("".join(found).encode(), f"{job['id']}_{kind}.jsonl")["id"] if found else None
        job["request_counts"] = {"total": len(job["lines"]), "completed": len(answered), "failed": len(failed)}
        return "completed"

    def line_answer(self, body: dict, batch_id: str, index: int) -> tuple[int, dict]:
        """A line's status and body, as /v1/chat/completions would answer it, logged as one request."""
        model, judged = body.get("model", ""), is_judge(body)
        fault, marker = self.server.standin.faults.fault_for(model, last_user_text(body.get("messages") or []))
        record = {"method": "", "path": batch_id, "model": model, "kind": "judge" if judged else "chat",
                  "fault": fault.kind if fault else "", "marker": marker, "batch": batch_id, "index": index}
        if fault and fault.kind.isdigit():
            status, answered = int(fault.kind), error_body(int(fault.kind), MESSAGES.get(int(fault.kind), ""))
        else:
            try:
                status, answered = 200, self.judge(model, body) if judged else self.rules(model, body)
                record["tokens"] = (answered["usage"]["prompt_tokens"], answered["usage"]["completion_tokens"])
            except (lexical_judge.UnknownRequest, ValueError, KeyError) as e:
                status, answered = 400, error_body(400, f"stand-in: {e}")
        self.server.standin.log(status=status, **record)
        return status, answered

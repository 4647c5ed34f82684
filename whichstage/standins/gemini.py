"""A stand-in Gemini API server on 127.0.0.1 for tests: the real REST API google-genai speaks, answered by the
offline backends. Point the real clients at it with GOOGLE_GEMINI_BASE_URL.

- `POST /v1/models/M:generateContent` with tools (ChatGoogleGenerativeAI in `create_agent`): the `rules` chat
  model; its tool calls go out as `functionCall` parts and the agent's `functionResponse` parts come back in
  as LangChain ToolMessages.
- `POST /v1/models/M:generateContent` asking for JSON (`generationConfig.responseMimeType` /
  `responseSchema`, DeepEval's GeminiModel): the `lexical` judge's handlers, chosen by the schema's title
  (else its property names) and the labelled sections of DeepEval's prompt, as ollama_standin does; never by
  case content.
- `POST :batchEmbedContents` / `:embedContent`: the `hash` embedder.
- `GET /v1/models/M`: the model's metadata (google-genai `models.get`), 404 for a model it does not serve.
- The Batch API (google-genai `batches.create(model=M, src=[inline requests])`, `batches.get/cancel/delete`):
  `POST /v1/models/M:batchGenerateContent` queues a job and answers its Operation, `name` "batches/ID",
  `metadata.state` BATCH_STATE_PENDING (google-genai reads it as JOB_STATE_PENDING); `GET /v1/batches/ID`
  answers BATCH_STATE_RUNNING for the first `batch_polls` gets (and until `batch_seconds` have passed), then
  the end state: SUCCEEDED with `metadata.output.inlinedResponses.inlinedResponses`, one per request in
  order, each `{"response": GenerateContentResponse}` (answered as generateContent answers it, usageMetadata
  and all) or `{"error": {code, message, status}}`, with the request's `metadata`; or FAILED / EXPIRED (a
  job-level fault). `POST /v1/batches/ID:cancel` ends a running job CANCELLED; `DELETE` forgets it. Jobs
  live in the StandIn, so any client (a new one, another process) gets a job by name for as long as the stand-in runs.

`usageMetadata` carries the offline backends' own counts, so tokens match an offline run. A key in
`reject_keys` is refused as Google refuses a bad key (400 INVALID_ARGUMENT, "API key not valid"); no key at
all is refused with 403. `faults` makes a model misbehave for requests whose last user text contains a
marker (see Fault), in a batch too, where a job holding one may also be refused at creation (429), answer
its polls 429 / 500 or with a reset connection, or never end. `serve()` starts it; `StandIn.requests` logs
every request answered, and every inline request of a batch once its job has run.
"""
import importlib
import itertools
import json
import os
import re
import socket
import struct
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler
from typing import Any, Iterable, Iterator, Mapping, Optional
from urllib.parse import parse_qs, urlsplit

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from whichstage.offline import lexical_judge
from whichstage.offline.hash_embedder import HashEmbeddings
from whichstage.offline.models import RulesChatModel
from whichstage.standins.ollama import bundled_roles, judge_kind, on_loopback
from whichstage.offline.words import words

PATH = re.compile(r"^/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+)(?::(?P<method>\w+))?$")
BATCH_PATH = re.compile(r"^/(?P<version>v1(?:alpha|beta)?)/batches/(?P<batch>[^/:]+)(?::(?P<method>\w+))?$")
# Without a schema title (a client may drop it), the one property DeepEval's schema has names the request.
BY_PROPERTY = {"truths": "Truths", "claims": "Claims", "statements": "Statements", "verdicts": "Verdicts"}
# A reason's schema has only `reason`: the prompt's score line says which metric asks.
REASON_BY_SCORE = {"Faithfulness Score:": "FaithfulnessScoreReason",
                   "Answer Relevancy Score:": "AnswerRelevancyScoreReason",
                   "Contextual Recall Score:": "ContextualRecallScoreReason",
                   "Contextual Precision Score:": "ContextualPrecisionScoreReason"}
STATUS = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
          500: "INTERNAL", 503: "UNAVAILABLE"}
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
ENDED = ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_EXPIRED", "BATCH_STATE_CANCELLED")
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


class StandIn:
    """A running stand-in: its `url`, its batch `jobs` by name, and a log of every request it answered
    (method, path, status, model, kind: get / chat / judge / embed / unknown-model / rejected-key /
    batch-create / batch-get / batch-cancel / batch-delete, the fault and marker it met, for an answer the
    usageMetadata `tokens` sent, in and out, and `batch`: the job's name on a batch request, "" elsewhere).
    A create's record has `requests`, the number of inline requests; a get's has the `state` it answered.
    Each inline request is logged too, once its job has run, as generateContent's would be (kind chat /
    judge, fault, marker, tokens) with method "", path and `batch` the job's name and `index` its place."""

    def __init__(self, models: Iterable[str], faults: Mapping[str, Mapping[str, Fault]], reject_keys: Iterable[str],
                 roles: Optional[dict] = None, batch_polls: int = 0, batch_seconds: float = 0.0):
        self.models = list(models)
        self.faults = {model: dict(by_marker) for model, by_marker in faults.items()}
        self.reject_keys = set(reject_keys)
        self.requests: list[dict] = []
        self.fired: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()
        self.chat = RulesChatModel(roles=bundled_roles() if roles is None else roles)
        self.embedder = HashEmbeddings()
        self.batch_polls, self.batch_seconds = batch_polls, batch_seconds
        self.jobs: dict[str, Job] = {}
        self.job_ids = itertools.count(1)
        self.url = ""

    def log(self, **record) -> None:
        with self.lock:
            self.requests.append(record)

    def count(self, **match) -> int:
        """Requests whose log record has every given field equal to the given value."""
        with self.lock:
            return sum(all(r.get(k) == v for k, v in match.items()) for r in self.requests)

    def fault_for(self, model: str, text: str, where: str = "request") -> tuple[Optional[Fault], str]:
        """The fault this request triggers, if any, with its marker; counts it against `times`. `where`: a
        batch job's faults when it is created, polled or run (WHERE), else each request's."""
        for marker, fault in self.faults.get(model, {}).items():
            if marker in text and WHERE.get(fault.kind, "request") == where:
                with self.lock:
                    fired = self.fired.get((model, marker), 0)
                    if fault.times is not None and fired >= fault.times:
                        return None, marker
                    self.fired[(model, marker)] = fired + 1
                return fault, marker
        return None, ""


def is_embedder(name: str) -> bool:
    return "embed" in name


def metadata(name: str) -> dict:
    """What GET /v1/models/NAME answers, in the shape of Google's Model resource."""
    methods = ["embedContent", "batchEmbedContents"] if is_embedder(name) else ["generateContent", "countTokens"]
    return {"name": f"models/{name}", "baseModelId": name, "version": "001", "displayName": f"{name} (stand-in)",
            "description": "A stand-in model answering through the offline backends.",
            "inputTokenLimit": 1048576, "outputTokenLimit": 65536 if not is_embedder(name) else 1,
            "supportedGenerationMethods": methods}


def error_body(code: int, message: str, details: Optional[list] = None) -> dict:
    error = {"code": code, "message": message, "status": STATUS.get(code, "UNKNOWN")}
    if details:
        error["details"] = details
    return {"error": error}


def texts_of(content: dict) -> list[str]:
    return [p["text"] for p in content.get("parts") or [] if isinstance(p.get("text"), str)]


def last_user_text(contents: list[dict]) -> str:
    """The text of the last user turn that has text (a turn carrying function responses has none)."""
    for content in reversed(contents):
        if content.get("role", "user") == "user" and texts_of(content):
            return "\n".join(texts_of(content))
    return ""


def tool_output(response: Any) -> str:
    """A functionResponse's `response` as the tool's own output: ChatGoogleGenerativeAI sends a JSON object
    output as is and wraps anything else as {"output": ...}."""
    if isinstance(response, dict) and set(response) == {"output"}:
        output = response["output"]
        return output if isinstance(output, str) else json.dumps(output)
    return json.dumps(response)


def to_langchain(body: dict) -> list[BaseMessage]:
    """A generateContent request as LangChain messages: systemInstruction, user text, the model's
    functionCall parts as tool calls, and the functionResponse parts as ToolMessages paired with them."""
    out: list[BaseMessage] = []
    system = texts_of(body.get("systemInstruction") or {})
    if system:
        out.append(SystemMessage("\n".join(system)))
    pending: list[dict] = []
    for content in body.get("contents") or []:
        role, parts = content.get("role", "user"), content.get("parts") or []
        text = "".join(texts_of(content))
        if role == "model":
            calls = [{"name": p["functionCall"]["name"], "args": p["functionCall"].get("args") or {},
                      "id": f"call_{len(out)}_{i}", "type": "tool_call"}
                     for i, p in enumerate(x for x in parts if "functionCall" in x)]
            out.append(AIMessage(text, tool_calls=calls))
            pending = list(calls)
            continue
        if role != "user":
            raise ValueError(f"unsupported content role {role!r}")
        for part in parts:
            if "functionResponse" in part:
                result = part["functionResponse"]
                match = next((c for c in pending if c["name"] == result.get("name")), None)
                if match:
                    pending.remove(match)
                out.append(ToolMessage(tool_output(result.get("response")), name=result.get("name"),
                                       tool_call_id=match["id"] if match else "call_unknown"))
        if text:
            out.append(HumanMessage(text))
    return out


def openai_tools(body: dict) -> list[dict]:
    """Gemini functionDeclarations in the OpenAI shape the rules model reads."""
    return [{"type": "function", "function": {"name": d["name"], "description": d.get("description", ""),
                                              "parameters": d.get("parameters") or {}}}
            for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []]


def schema_title(schema: dict, prompt: str) -> str:
    """The schema DeepEval asked for: its title, else what its properties say."""
    if schema.get("title"):
        return schema["title"]
    properties = set(schema.get("properties") or {})
    if properties == {"reason"}:
        found = [title for score, title in REASON_BY_SCORE.items() if score in prompt]
        return found[-1] if found else ""
    return next((BY_PROPERTY[p] for p in properties if p in BY_PROPERTY), "")


def judge_text(kind: tuple[str, str], answer: dict) -> str:
    """The answer as the lexical judge serialises it (DeepEval's own schema class, when importable), so the
    word counts match the offline judge's."""
    try:
        schema = getattr(importlib.import_module(f"deepeval.metrics.{kind[0]}.schema"), kind[1])
    except (ImportError, AttributeError):
        return json.dumps(answer)
    return schema.model_validate(answer).model_dump_json()


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
        out["response"] = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput",
                           "inlinedResponses": {"inlinedResponses": responses}}
    if job.error:
        out["error"] = job.error
    return out


def job_text(requests: list) -> str:
    """The last user text of each inline request of a job, one a line: what its faults' markers are sought in."""
    return "\n".join(last_user_text((item.get("request") or {}).get("contents") or []) for item in requests)


def usage(prompt_tokens: int, answer_tokens: int) -> dict:
    return {"promptTokenCount": prompt_tokens, "candidatesTokenCount": answer_tokens,
            "totalTokenCount": prompt_tokens + answer_tokens}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, *args) -> None:  # quiet: tests read the request log instead
        pass

    def reply(self, status: int, body: Any, headers: Optional[dict] = None, **record) -> None:
        # Logged before the answer leaves, so a client that has its answer finds the request in the log.
        self.server.standin.log(method=self.command, path=urlsplit(self.path).path, status=status,
                                **{"model": "", "kind": "", "fault": "", "marker": "", "batch": "", **record})
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def api_key(self) -> str:
        return self.headers.get("x-goog-api-key") or (parse_qs(urlsplit(self.path).query).get("key") or [""])[0]

    def reset(self, **record) -> None:
        """Answer nothing: the connection is reset (RST), as a proxy or a load balancer may drop it."""
        self.server.standin.log(method=self.command, path=urlsplit(self.path).path, status=0,
                                **{"model": "", "kind": "", "fault": "", "marker": "", "batch": "", **record})
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        os.close(self.connection.detach())  # now, though the handler's streams still hold the socket

    def route(self) -> Optional[dict]:
        """The request's version, model and method, after the key check; None once an error is answered."""
        standin: StandIn = self.server.standin
        url = urlsplit(self.path)
        found = PATH.match(url.path)
        key = self.api_key()
        if not key:
            self.reply(403, error_body(403, "Method doesn't allow unregistered callers (callers without "
                                            "established identity). Please use API Key or other form of API "
                                            "consumer identity to call this API."))
            return None
        if key in standin.reject_keys:
            self.reply(400, error_body(400, "API key not valid. Please pass a valid API key.", [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}]),
                kind="rejected-key")
            return None
        batch = BATCH_PATH.match(url.path)
        if batch:
            return {"model": "", **batch.groupdict(), "batch": f"batches/{batch['batch']}"}
        if not found:
            self.reply(404, error_body(404, f"stand-in: no such endpoint {url.path}"))
            return None
        route = {**found.groupdict(), "batch": ""}
        if route["model"] not in standin.models:
            self.reply(404, error_body(404, f"models/{route['model']} is not found for API version "
                                            f"{route['version']}, or is not supported for "
                                            f"{route['method'] or 'get'}. Call ListModels to see the list of "
                                            "available models and their supported methods."),
                       model=route["model"], kind="unknown-model")
            return None
        return route

    def do_GET(self) -> None:
        route = self.route()
        if route is None:
            return
        if route["batch"] and not route["method"]:
            return self.batch_get(route["batch"])
        if route["method"] or route["batch"]:
            return self.reply(404, error_body(404, f"stand-in: GET :{route['method']} is not served"))
        self.reply(200, metadata(route["model"]), model=route["model"], kind="get")

    def do_DELETE(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = self.route()
        if route is None:
            return
        if not route["batch"] or route["method"]:
            return self.reply(404, error_body(404, f"stand-in: DELETE {urlsplit(self.path).path} is not served"))
        self.batch_end(route["batch"], "delete")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        route = self.route()
        if route is None:
            return
        model, method = route["model"], route["method"]
        if route["batch"]:
            if method != "cancel":
                return self.reply(404, error_body(404, f"stand-in: POST batches/...:{method} is not served"))
            return self.batch_end(route["batch"], "cancel")
        if method == "batchGenerateContent":
            return self.batch_create(model, body)
        if method in ("batchEmbedContents", "embedContent"):
            requests = body.get("requests") if method == "batchEmbedContents" else [body]
            texts = ["\n".join(texts_of(r.get("content") or {})) for r in requests or []]
            return self.answer(model, "embed", texts[-1] if texts else "", lambda: self.embed(method, texts))
        if method != "generateContent":
            return self.reply(404, error_body(404, f"stand-in: :{method} is not served"), model=model)
        self.answer(model, *self.generate(model, body))

    def generate(self, model: str, body: dict) -> tuple:
        """A generateContent request's kind (judge or chat), its last user text, and how to answer it."""
        config = body.get("generationConfig") or {}
        judged = bool(config.get("responseSchema") or config.get("responseJsonSchema")
                      or config.get("responseMimeType") == "application/json")
        text = last_user_text(body.get("contents") or [])
        return ("judge" if judged else "chat", text,
                lambda fault: self.judge(model, body, fault) if judged else self.rules(model, body, fault))

    def answer(self, model: str, kind: str, text: str, respond) -> None:
        """Answer a model request: an HTTP fault, or the backend's answer (with a response-shape fault)."""
        status, body, headers, record = self.outcome(model, kind, text, respond)
        self.reply(status, body, headers, **record)

    def outcome(self, model: str, kind: str, text: str, respond) -> tuple[int, dict, Optional[dict], dict]:
        """What a model request is answered: status, body, headers and the log record's fields."""
        fault, marker = self.server.standin.fault_for(model, text)
        record = {"model": model, "kind": kind, "fault": fault.kind if fault else "", "marker": marker}
        if fault and fault.kind == "key-echo":
            return 400, error_body(400, f"stand-in: refused the request made with key {self.api_key()}"), None, record
        if fault and fault.kind.isdigit():
            status = int(fault.kind)
            headers = {"Retry-After": f"{fault.retry_after:g}"} if status == 429 else None
            return status, error_body(status, MESSAGES[status]), headers, record
        try:
            body = respond() if kind == "embed" else respond(fault)
        except (lexical_judge.UnknownRequest, ValueError, KeyError) as e:
            return 400, error_body(400, f"stand-in: {e}"), None, record
        if "usageMetadata" in body:
            record["tokens"] = (body["usageMetadata"]["promptTokenCount"], body["usageMetadata"]["candidatesTokenCount"])
        return 200, body, None, record

    def batch_create(self, model: str, body: dict) -> None:
        """Queue a batch job of inline requests; nothing is answered until a get finds the job due."""
        standin: StandIn = self.server.standin
        batch = body.get("batch") or {}
        requests = ((batch.get("inputConfig") or {}).get("requests") or {}).get("requests")
        record = {"model": model, "kind": "batch-create"}
        if is_embedder(model):
            return self.reply(400, error_body(400, f"models/{model} does not support batchGenerateContent"),
                              **record)
        if not isinstance(requests, list) or not requests or not all(isinstance(r, dict) for r in requests):
            return self.reply(400, error_body(400, "stand-in: a batch needs inputConfig.requests.requests, a "
                                                   "non-empty list of inline requests (no file input)"), **record)
        fault, marker = standin.fault_for(model, job_text(requests), "create")
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
        standin: StandIn = self.server.standin
        job = standin.jobs.get(name)
        if job is None:
            return self.reply(404, error_body(404, "Requested entity was not found."), kind="batch-get", batch=name)
        polled, marker = standin.fault_for(job.model, job_text(job.requests), "poll")
        if polled:
            record = {"model": job.model, "kind": "batch-get", "batch": name, "fault": polled.kind, "marker": marker}
            if polled.kind == "poll-reset":
                return self.reset(**record)
            status = int(polled.kind.removeprefix("poll-"))
            headers = {"Retry-After": f"{polled.retry_after:g}"} if status == 429 else None
            return self.reply(status, error_body(status, MESSAGES[status]), headers, **record)
        fault = {"fault": "", "marker": ""}
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
        standin: StandIn = self.server.standin
        bodies = [item.get("request") or {} for item in job.requests]
        fault, marker = standin.fault_for(job.model, job_text(job.requests), "run")
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
        for index, (item, body) in enumerate(zip(job.requests, bodies)):
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
        standin: StandIn = self.server.standin
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

    def embed(self, method: str, texts: list[str]) -> dict:
        vectors = self.server.standin.embedder.embed_documents(texts)
        if method == "embedContent":
            return {"embedding": {"values": vectors[0]}}
        return {"embeddings": [{"values": v} for v in vectors]}

    def shaped(self, model: str, parts: list[dict], tokens_in: int, tokens_out: int, fault: Optional[Fault]) -> dict:
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

    def rules(self, model: str, body: dict, fault: Optional[Fault]) -> dict:
        reply = self.server.standin.chat._generate(to_langchain(body), tools=openai_tools(body))
        ai = reply.generations[0].message
        parts = [{"text": ai.text}] if ai.text else []
        parts += [{"functionCall": {"name": c["name"], "args": c["args"]}} for c in ai.tool_calls]
        counts = ai.usage_metadata or {}
        return self.shaped(model, parts, counts.get("input_tokens", 0), counts.get("output_tokens", 0), fault)

    def judge(self, model: str, body: dict, fault: Optional[Fault]) -> dict:
        prompt = "\n".join(t for c in body.get("contents") or [] for t in texts_of(c))
        if fault and fault.kind in ("blocked", "safety", "no-candidates"):  # no answer is written at all
            return self.shaped(model, [], len(words(prompt)), 0, fault)
        config = body.get("generationConfig") or {}
        schema = config.get("responseSchema") or config.get("responseJsonSchema") or {}
        kind = judge_kind(prompt, schema_title(schema, prompt))
        text = judge_text(kind, lexical_judge.HANDLERS[kind](prompt))
        if fault and fault.kind == "bad-json":
            text = text[: len(text) // 2]  # cut off mid-answer, as when a model stops early
        return self.shaped(model, [{"text": text}], len(words(prompt)), len(words(text)), fault)


@contextmanager
def serve(models: Iterable[str] = ("gemini-standin-chat", "gemini-standin-embed", "gemini-standin-judge"),
          faults: Optional[Mapping[str, Mapping[str, Fault]]] = None,
          reject_keys: Iterable[str] = (), roles: Optional[dict] = None, batch_polls: int = 0,
          batch_seconds: float = 0.0) -> Iterator[StandIn]:
    """Run a stand-in on a free port of 127.0.0.1 serving `models` (a name containing "embed" is an
    embedder). `faults[model][marker]` is the Fault that model shows for requests whose last user text
    (for embeddings, the last text embedded) contains `marker`; `reject_keys` are API keys it refuses; `roles`
    are the tool roles its rules model is told (default: the bundled example's). A batch job stays PENDING
    (as created) / RUNNING for its first `batch_polls` gets and at least `batch_seconds` after its creation;
    the get after that runs it and answers its end state."""
    with on_loopback(Handler, StandIn(models, faults or {}, reject_keys, roles, batch_polls,
                                      batch_seconds)) as standin:
        yield standin

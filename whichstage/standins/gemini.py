"""A stand-in Gemini API server on 127.0.0.1 for tests: the real REST API google-genai speaks, answered by the
offline backends. Point the real clients at it with GOOGLE_GEMINI_BASE_URL.

- `POST /v1/models/M:generateContent` with tools (ChatGoogleGenerativeAI in `create_agent`): the `rules` chat
  model; its tool calls go out as `functionCall` parts and the agent's `functionResponse` parts come back in
  as LangChain ToolMessages.
- `POST /v1/models/M:generateContent` asking for JSON (`generationConfig.responseMimeType` /
  `responseSchema`, DeepEval's GeminiModel): the `lexical` judge, on the schema class the responseSchema
  names (judge_requests.py, shared by every stand-in).
- `POST :batchEmbedContents` / `:embedContent`: the `hash` embedder.
- `GET /v1/models/M`: the model's metadata (google-genai `models.get`), 404 for a model it does not serve.
- The Batch API (`:batchGenerateContent`, `GET` / `:cancel` / `DELETE` of `batches/ID`): gemini_batch.py.

`usageMetadata` carries the offline backends' own counts, so tokens match an offline run. A key in
`reject_keys` is refused as Google refuses a bad key (400 INVALID_ARGUMENT, "API key not valid"); no key at
all is refused with 403. `faults` makes a model misbehave for requests whose last user text contains a
marker (gemini_faults.Fault), in a batch too. `serve()` starts it; `StandIn.requests` logs
every request answered, and every inline request of a batch once its job has run.
"""
import itertools
import json
import os
import re
import socket
import struct
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Optional
from urllib.parse import parse_qs, urlsplit

from whichstage.offline import lexical_judge
from whichstage.offline.hash_embedder import HashEmbeddings
from whichstage.offline.models import RulesChatModel
from whichstage.offline.words import words
from whichstage.standins.gemini_batch import BatchRoutes, Job
from whichstage.standins.gemini_faults import Fault, Faults, http_fault, shaped
from whichstage.standins.gemini_wire import error_body, last_user_text, metadata, openai_tools, texts_of, \
    to_langchain
from whichstage.standins.judge_requests import answer
from whichstage.standins.ollama import QuietHandler, RequestLog, bundled_roles, on_loopback

PATH = re.compile(r"^/(?P<version>v1(?:alpha|beta)?)/models/(?P<model>[^/:]+)(?::(?P<method>\w+))?$")
BATCH_PATH = re.compile(r"^/(?P<version>v1(?:alpha|beta)?)/batches/(?P<batch>[^/:]+)(?::(?P<method>\w+))?$")


class StandIn(RequestLog):
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
        self.faults = Faults(faults)
        self.reject_keys = set(reject_keys)
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.chat = RulesChatModel(roles=bundled_roles() if roles is None else roles)
        self.embedder = HashEmbeddings()
        self.batch_polls, self.batch_seconds = batch_polls, batch_seconds
        self.jobs: dict[str, Job] = {}
        self.job_ids = itertools.count(1)
        self.url = ""


class Handler(BatchRoutes, QuietHandler):
    # self a QuietHandler: anthropic.Handler answers with this function too
    def reply(self: QuietHandler, status: int, body: Any, headers: Optional[dict] = None, **record) -> None:
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
        standin = self.server.standin
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
        self.body()
        route = self.route()
        if route is None:
            return
        if not route["batch"] or route["method"]:
            return self.reply(404, error_body(404, f"stand-in: DELETE {urlsplit(self.path).path} is not served"))
        self.batch_end(route["batch"], "delete")

    def do_POST(self) -> None:
        body = json.loads(self.body() or b"{}")
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
        fault, marker = self.server.standin.faults.fault_for(model, text)
        record = {"model": model, "kind": kind, "fault": fault.kind if fault else "", "marker": marker}
        refused = http_fault(fault, self.api_key())
        if refused:
            return (*refused, record)
        try:
            body = respond() if kind == "embed" else respond(fault)
        except (lexical_judge.UnknownRequest, ValueError, KeyError) as e:
            return 400, error_body(400, f"stand-in: {e}"), None, record
        if "usageMetadata" in body:
            usage = body["usageMetadata"]
            record["tokens"] = (usage["promptTokenCount"], usage["candidatesTokenCount"])
        return 200, body, None, record

    def embed(self, method: str, texts: list[str]) -> dict:
        vectors = self.server.standin.embedder.embed_documents(texts)
        if method == "embedContent":
            return {"embedding": {"values": vectors[0]}}
        return {"embeddings": [{"values": v} for v in vectors]}

    def rules(self, model: str, body: dict, fault: Optional[Fault]) -> dict:
        reply = self.server.standin.chat._generate(to_langchain(body), tools=openai_tools(body))
        ai = reply.generations[0].message
        parts = [{"text": ai.text}] if ai.text else []
        parts += [{"functionCall": {"name": c["name"], "args": c["args"]}} for c in ai.tool_calls]
        counts = ai.usage_metadata or {}
        return shaped(model, parts, counts.get("input_tokens", 0), counts.get("output_tokens", 0), fault)

    def judge(self, model: str, body: dict, fault: Optional[Fault]) -> dict:
        prompt = "\n".join(t for c in body.get("contents") or [] for t in texts_of(c))
        if fault and fault.kind in ("blocked", "safety", "no-candidates"):  # no answer is written at all
            return shaped(model, [], len(words(prompt)), 0, fault)
        config = body.get("generationConfig") or {}
        schema = config.get("responseSchema") or config.get("responseJsonSchema") or {}
        text, tokens_in, tokens_out = answer(prompt, schema)
        if fault and fault.kind == "bad-json":
            text = text[: len(text) // 2]  # cut off mid-answer, as when a model stops early
        return shaped(model, [{"text": text}], tokens_in, tokens_out, fault)


@contextmanager
def serve(models: Iterable[str] = ("gemini-standin-chat", "gemini-standin-embed", "gemini-standin-judge"),
          faults: Optional[Mapping[str, Mapping[str, Fault]]] = None,
          reject_keys: Iterable[str] = (), roles: Optional[dict] = None, batch_polls: int = 0,
          batch_seconds: float = 0.0, port: int = 0) -> Iterator[StandIn]:
    """Run a stand-in on `port` of 127.0.0.1 (0: a free one) serving `models` (a name containing "embed" is an
    embedder). `faults[model][marker]` is the Fault that model shows for requests whose last user text
    (for embeddings, the last text embedded) contains `marker`; `reject_keys` are API keys it refuses; `roles`
    are the tool roles its rules model is told (default: the project's in the current folder). A batch job
    stays PENDING (as created) / RUNNING for its first `batch_polls` gets and at least `batch_seconds` after
    its creation; the get after that runs it and answers its end state."""
    with on_loopback(Handler, StandIn(models, faults or {}, reject_keys, roles, batch_polls,
                                      batch_seconds), port) as standin:
        yield standin

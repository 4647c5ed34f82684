"""A stand-in OpenAI API server on 127.0.0.1 for tests: the REST API the openai SDK speaks (ChatOpenAI,
OpenAIEmbeddings, DeepEval's OpenAIModel), answered by the offline backends. Point the real clients at it with
OPENAI_BASE_URL (http://127.0.0.1:PORT/v1).

- `POST /v1/chat/completions` with tools: the `rules` chat model, its tool calls as `tool_calls` (arguments as
  JSON text), the agent's `tool` messages back as LangChain ToolMessages; `usage` carries the rules model's
  own counts, so tokens match an offline run.
- `POST /v1/chat/completions` with a `response_format` json_schema: the `lexical` judge, on the schema class
  it names (judge_requests.py, shared by every stand-in); usage is the offline judge's word counts.
- `POST /v1/embeddings`: the `hash` embedder, as floats or base64 float32 as asked.
- `GET /v1/models/M`: the model (models.retrieve), 404 for a model it does not serve.
- The Files and Batch APIs (`POST /v1/files`, `POST /v1/batches`, `GET /v1/batches/ID`,
  `GET /v1/files/ID/content`): openai_batch.py.

No `Authorization: Bearer` key, or one in `reject_keys`, is refused with 401. `faults[model][marker]` (a
gemini_faults.Fault of kind 429 with Retry-After, 500 or 503) answers requests whose last user text contains
the marker with that error; a model in `silent` reads each request, logs it (status 0) and never answers.
`serve()` starts it; `StandIn.requests` logs every request (method, path, status, model, kind, fault, marker,
tokens).
"""
import json
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Optional

from whichstage.offline import lexical_judge
from whichstage.offline.hash_embedder import HashEmbeddings
from whichstage.offline.models import RulesChatModel
from whichstage.offline.words import words
from whichstage.standins.gemini_faults import Fault, Faults
from whichstage.standins.judge_requests import answer
from whichstage.standins.openai_batch import BatchRoutes
from whichstage.standins.ollama import QuietHandler, RequestLog, bundled_roles, on_loopback
from whichstage.standins.openai_wire import MESSAGES, completion, embeddings, error_body, is_judge, \
    last_user_text, model_body, schema_of, text_of, to_langchain

MODELS = ("gpt-4.1-mini", "text-embedding-3-small")


class StandIn(RequestLog):
    """A running stand-in: its `url` (the base URL, ending /v1) and a log of every request it answered."""

    def __init__(self, models: Iterable[str], faults: Mapping[str, Mapping[str, Fault]], reject_keys: Iterable[str],
                 silent: Iterable[str], roles: Optional[dict], batch_polls: int = 0):
        self.models, self.faults, self.reject_keys = list(models), Faults(faults), set(reject_keys)
        self.silent, self.closing = set(silent), threading.Event()
        self.chat = RulesChatModel(roles=bundled_roles() if roles is None else roles)
        self.embedder = HashEmbeddings()
        self.files: dict[str, bytes] = {}
        self.jobs: dict[str, dict] = {}  # batch id -> its input lines, status, files, gets
        self.batch_polls = batch_polls
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.url = ""


class Handler(BatchRoutes, QuietHandler):
    def reply(self, status: int, body: Any, headers: Optional[dict] = None, raw: bool = False, **record) -> None:
        # Logged before the answer leaves, so a client that has its answer finds the request in the log.
        self.server.standin.log(method=self.command, path=self.path.split("?")[0], status=status,
                                **{"model": "", "kind": "", "fault": "", "marker": "", "batch": "", **record})
        data = body if raw else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream" if raw else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def authorised(self) -> bool:
        """The request carries a key the stand-in takes; else a 401 is answered."""
        key = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if key and key not in self.server.standin.reject_keys:
            return True
        message = "Incorrect API key provided." if key else "You didn't provide an API key."
        self.reply(401, error_body(401, message, "invalid_api_key"), kind="rejected-key")
        return False

    def known(self, model: str) -> bool:
        """The stand-in serves the model; else a 404 is answered."""
        if model in self.server.standin.models:
            return True
        self.reply(404, error_body(404, f"The model `{model}` does not exist or you do not have access to it.",
                                   "model_not_found"), model=model, kind="unknown-model")
        return False

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if not self.authorised():
            return
        if path.startswith("/v1/batches/"):
            return self.batch_get(path[len("/v1/batches/"):])
        if path.startswith("/v1/files/") and path.endswith("/content"):
            return self.file_content(path[len("/v1/files/"):-len("/content")])
        if not path.startswith("/v1/models/"):
            return self.reply(404, error_body(404, f"stand-in: GET {path} is not served"))
        model = path[len("/v1/models/"):]
        if self.known(model):
            self.reply(200, model_body(model), model=model, kind="get")

    def do_POST(self) -> None:
        raw, path = self.body(), self.path.split("?")[0]
        if not self.authorised():
            return
        if path == "/v1/files":
            return self.upload(raw)
        body = json.loads(raw or b"{}")
        model = body.get("model", "")
        if path == "/v1/batches":
            return self.batch_create(body)
        if path not in ("/v1/chat/completions", "/v1/embeddings"):
            return self.reply(404, error_body(404, f"stand-in: POST {path} is not served"))
        if not self.known(model):
            return
        if model in self.server.standin.silent:  # read, then never answered: the client's timeout ends it
            self.server.standin.log(method="POST", path=path, status=0, model=model, kind="silent", fault="",
                                    marker="")
            self.server.standin.closing.wait()
            self.close_connection = True
            return
        if path == "/v1/embeddings":
            texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
            return self.answer(model, "embed", texts[-1] if texts else "", lambda: self.embed(model, body, texts))
        messages = body.get("messages") or []
        if is_judge(body):
            return self.answer(model, "judge", last_user_text(messages), lambda: self.judge(model, body))
        self.answer(model, "chat", last_user_text(messages), lambda: self.rules(model, body))

    def answer(self, model: str, kind: str, text: str, respond) -> None:
        """Answer a model request: its fault's HTTP error, or the backend's answer."""
        fault, marker = self.server.standin.faults.fault_for(model, text)
        record = {"model": model, "kind": kind, "fault": fault.kind if fault else "", "marker": marker}
        if fault and fault.kind.isdigit():
            status = int(fault.kind)
            headers = {"Retry-After": f"{fault.retry_after:g}"} if status == 429 else None
            return self.reply(status, error_body(status, MESSAGES.get(status, "stand-in error")), headers, **record)
        try:
            answered = respond()
        except (lexical_judge.UnknownRequest, ValueError, KeyError) as e:
            return self.reply(400, error_body(400, f"stand-in: {e}"), **record)
        usage = answered.get("usage") or {}
        self.reply(200, answered, tokens=(usage.get("prompt_tokens"), usage.get("completion_tokens", 0)), **record)

    def embed(self, model: str, body: dict, texts: list[str]) -> dict:
        vectors = self.server.standin.embedder.embed_documents(texts)
        return embeddings(model, vectors, body.get("encoding_format") or "float", sum(len(words(t)) for t in texts))

    def rules(self, model: str, body: dict) -> dict:
        reply = self.server.standin.chat._generate(to_langchain(body.get("messages") or []),
                                                   tools=body.get("tools") or [])
        ai = reply.generations[0].message
        counts = ai.usage_metadata or {}
        return completion(model, ai.text, ai.tool_calls, counts.get("input_tokens", 0), counts.get("output_tokens", 0))

    def judge(self, model: str, body: dict) -> dict:
        prompt = "\n".join(text_of(m.get("content")) for m in body.get("messages") or [])
        name, schema = schema_of(body)
        text, tokens_in, tokens_out = answer(prompt, {"title": name, **schema})
        return completion(model, text, [], tokens_in, tokens_out)


@contextmanager
def serve(models: Iterable[str] = MODELS, faults: Optional[Mapping[str, Mapping[str, Fault]]] = None,
          reject_keys: Iterable[str] = (), silent: Iterable[str] = (), roles: Optional[dict] = None,
          batch_polls: int = 0, port: int = 0) -> Iterator[StandIn]:
    """Run a stand-in on `port` of 127.0.0.1 (0: a free one) serving `models`; `faults[model][marker]` is the
    Fault that model shows for requests whose last user text (for embeddings, the last text embedded) contains
    `marker`; `reject_keys` are API keys it refuses; the models in `silent` never answer; `roles` are the tool
    roles its rules model is told (default: the project's in the current folder); a batch stays in_progress for
    its first `batch_polls` gets."""
    standin = StandIn(models, faults or {}, reject_keys, silent, roles, batch_polls)
    try:
        with on_loopback(Handler, standin, port):
            standin.url += "/v1"
            yield standin
    finally:
        standin.closing.set()

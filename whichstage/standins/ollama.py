"""A stand-in Ollama server on 127.0.0.1 for tests: the real Ollama HTTP API, answered by the offline backends.

`/api/chat` with tools is answered by the `rules` chat model, `/api/chat` with a JSON-schema `format` (DeepEval's
OllamaModel) by the `lexical` judge on the schema class the format names (judge_requests.py, shared by every
stand-in), `/api/embed` by the `hash` embedder. `serve()` starts it.
"""
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from whichstage.offline import lexical_judge
from whichstage.offline.hash_embedder import HashEmbeddings
from whichstage.offline.models import RulesChatModel
from whichstage.standins import judge_requests


class StandIn:
    """A running stand-in: its `url`, and a log of every request it answered (path, model, kind, status, stream)."""

    def __init__(self, models: Iterable[str], fail: Mapping[str, int], fail_if: str, roles: Optional[dict] = None):
        self.models, self.fail, self.fail_if = list(models), dict(fail), fail_if
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.chat, self.embedder = RulesChatModel(roles=bundled_roles() if roles is None else roles), HashEmbeddings()
        self.url = ""

    def count(self, path: str, kind: str | None = None) -> int:
        with self.lock:
            return sum(r["path"] == path and (kind is None or r["kind"] == kind) for r in self.requests)

    def known(self, name: str) -> bool:
        return name in self.models or f"{name}:latest" in self.models


def to_langchain(messages: list[dict]) -> list[BaseMessage]:
    """Ollama chat messages as LangChain messages."""
    out: list[BaseMessage] = []
    pending: list[dict] = []
    for m in messages:
        role, text = m.get("role"), m.get("content") or ""
        if role == "system":
            out.append(SystemMessage(text))
        elif role == "user":
            out.append(HumanMessage(text))
        elif role == "assistant":
            calls = [{"name": c["function"]["name"], "args": c["function"].get("arguments") or {},
                      "id": f"call_{len(out)}_{i}", "type": "tool_call"}
                     for i, c in enumerate(m.get("tool_calls") or [])]
            out.append(AIMessage(text, tool_calls=calls))
            pending = list(calls)
        elif role == "tool":
            # ChatOllama sends tool_call_id, which the ollama client drops; like Ollama, pair tool results
            # with the assistant's calls in order.
            call = pending.pop(0) if pending else {"name": m.get("tool_name"), "id": "call_unknown"}
            out.append(ToolMessage(text, tool_call_id=call["id"], name=m.get("tool_name") or call["name"]))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


class QuietHandler(BaseHTTPRequestHandler):
    """A stand-in's handler: HTTP/1.1 (kept-alive connections, as the SDKs use them) and no log line on
    stderr: tests read the stand-in's request log instead. Shared by the stand-in servers."""
    protocol_version = "HTTP/1.1"
    # An answer's headers and body are written apart: on a kept-alive connection Nagle's algorithm would hold
    # the body back until the client's delayed ACK, ~40 ms a request.
    disable_nagle_algorithm = True
    server: Any
    read: Optional[bytes] = None

    def parse_request(self) -> bool:
        self.read = None  # a kept-alive connection's handler serves its every request
        return super().parse_request()

    def body(self) -> bytes:
        """The request's body, read from the connection once: a test's wrapper of a handler reads it here
        first. Reading it otherwise (and handing the handler a new `rfile`) would leave the next request on
        the connection unread: the server would close it as the client sends on it, dropped unanswered."""
        if self.read is None:
            self.read = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return self.read

    def log_message(self, *args) -> None:
        pass


class RequestLog:
    """A stand-in's `requests` (one dict each) under its `lock`, which the class sets; shared by the
    stand-in servers that log by field."""
    requests: list[dict]
    lock: Any

    def log(self, **record) -> None:
        with self.lock:
            self.requests.append(record)

    def count(self, **match) -> int:
        """Requests whose log record has every given field equal to the given value."""
        with self.lock:
            return sum(all(r.get(k) == v for k, v in match.items()) for r in self.requests)


class Handler(QuietHandler):

    def reply(self, status: int, body: Any, kind: str = "", model: str = "", stream: bool = False) -> None:
        lines = body if stream else [body]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-ndjson" if stream else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        standin = self.server.standin
        with standin.lock:
            standin.requests.append({"path": self.path, "model": model, "kind": kind, "status": status,
                                     "stream": stream})

    def do_GET(self) -> None:
        if self.path == "/api/tags":
            return self.reply(200, {"models": [{"name": n, "model": n} for n in self.server.standin.models]})
        self.reply(404, {"error": "404 page not found"})

    def do_POST(self) -> None:
        standin: StandIn = self.server.standin
        request = json.loads(self.body() or b"{}")
        model = request.get("model", "")
        if self.path not in ("/api/chat", "/api/embed"):
            return self.reply(404, {"error": "404 page not found"})
        if not standin.known(model):
            return self.reply(404, {"error": f"model '{model}' not found"}, model=model)
        if self.path == "/api/embed":
            texts = [request["input"]] if isinstance(request["input"], str) else request["input"]
            return self.reply(200, {"model": model, "embeddings": standin.embedder.embed_documents(texts)},
                              "embed", model)
        kind = "format" if request.get("format") else "tools" if request.get("tools") else "plain"
        users = [m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "user"]
        if model in standin.fail and standin.fail_if in (users[-1] if users else ""):
            status = standin.fail[model]  # 404 as when the model is removed after the preflight
            error = f"model '{model}' not found" if status == 404 else f"stand-in: forced HTTP {status}"
            return self.reply(status, {"error": error}, kind, model)
        try:
            message, tokens_in, tokens_out = (self.judge(request) if kind == "format" else self.rules(request))
        except (lexical_judge.UnknownRequest, ValueError, KeyError) as e:
            return self.reply(400, {"error": f"stand-in: {e}"}, kind, model)
        done = {"model": model, "created_at": "2026-01-01T00:00:00Z", "done": True, "done_reason": "stop",
                "prompt_eval_count": tokens_in, "eval_count": tokens_out}
        if not request.get("stream"):
            return self.reply(200, {**done, "message": message}, kind, model)
        # Streaming as Ollama does: the message in a chunk, then a final empty chunk carrying the counts.
        chunk = {"model": model, "created_at": done["created_at"], "message": message, "done": False}
        self.reply(200, [chunk, {**done, "message": {"role": "assistant", "content": ""}}], kind, model, stream=True)

    def rules(self, request: dict) -> tuple[dict, int, int]:
        tools = request.get("tools") or []
        reply = self.server.standin.chat._generate(to_langchain(request["messages"]), tools=tools)
        ai = reply.generations[0].message
        message = {"role": "assistant", "content": ai.text}
        if ai.tool_calls:
            message["tool_calls"] = [{"function": {"name": c["name"], "arguments": c["args"]}} for c in ai.tool_calls]
        usage = ai.usage_metadata or {}
        return message, usage.get("input_tokens", 0), usage.get("output_tokens", 0)

    def judge(self, request: dict) -> tuple[dict, int, int]:
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        schema = request["format"] if isinstance(request["format"], dict) else {}  # "json": JSON with no schema
        text, tokens_in, tokens_out = judge_requests.answer(prompt, schema)
        return {"role": "assistant", "content": text}, tokens_in, tokens_out


def bundled_roles(folder: Optional[Path] = None) -> dict:
    """The roles the `rules` model behind a stand-in is told (a real model reads only the tools): those of
    the project in `folder`, by default the current folder's."""
    from whichstage.agent import factory as agent
    from whichstage.project import corpus, config as project

    loaded = project.load(folder or Path.cwd())
    return agent.rules_roles(loaded, corpus.read_records(loaded))


@contextmanager
def serve(models: Iterable[str] = ("standin-chat", "standin-embed", "standin-judge"),
          fail: Mapping[str, int] | None = None, fail_if: str = "", roles: Optional[dict] = None,
          port: int = 0) -> Iterator[StandIn]:
    """Run a stand-in on `port` of 127.0.0.1 (0: a free one) serving `models`. /api/chat answers the HTTP status
    `fail[model]` (e.g. 500) for the models `fail` names, when their last user message contains `fail_if`.
    `roles` are the tool roles its rules model is told (default: the project's in the current folder)."""
    with on_loopback(Handler, StandIn(models, fail or {}, fail_if, roles), port) as standin:
        yield standin


@contextmanager
def on_loopback(handler: type, standin: Any, port: int = 0) -> Iterator[Any]:
    """Serve `handler` on `port` of 127.0.0.1 (0: a free one), with `standin` (given its `url`) as the server's
    state, until the block ends. Shared by the stand-in servers."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    server.standin = standin  # type: ignore[attr-defined]
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    # it looks for the end of the block every 50 ms, not socketserver's 500: stopping it takes no half second
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

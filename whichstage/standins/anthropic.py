"""A stand-in Anthropic API server on 127.0.0.1 for tests: the real Messages API the anthropic SDK speaks,
answered by the offline backends. Point the real clients at it with ANTHROPIC_BASE_URL.

- `POST /v1/messages` with `output_config.format` (DeepEval's AnthropicModel asking for structured output): the
  `lexical` judge's handlers, chosen by the schema's title (else its properties) and the prompt's labelled
  sections, as the Gemini stand-in does; any other request (ChatAnthropic in `create_agent`): the `rules` chat
  model, its tool calls sent as `tool_use` blocks and the agent's `tool_result` blocks read back as ToolMessages.
- `GET /v1/models/ID`: the model's metadata (anthropic `models.retrieve`), 404 for a model it does not serve.

`usage` carries the offline backends' own counts, so tokens match an offline run. No key (`x-api-key`, or
`Authorization: Bearer` as anthropic 2.x sends it), or one in `reject_keys`, is answered 401 as Anthropic answers it. `faults` makes a model misbehave for requests whose last
user text contains a marker (Fault: 429 with Retry-After, 500, 529 overloaded, or no answer at all).
`serve()` starts it; `StandIn.requests` logs every request it answered (or held).
"""
import itertools
import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Iterable, Iterator, Mapping, Optional
from urllib.parse import urlsplit

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from whichstage.offline import lexical_judge
from whichstage.offline.models import RulesChatModel
from whichstage.offline.words import words
from whichstage.standins import gemini as gemini_standin, gemini_faults
from whichstage.standins.gemini_wire import judge_text, schema_title
from whichstage.standins.ollama import bundled_roles, judge_kind, on_loopback

KINDS = ("429", "500", "529", "hang")
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
MESSAGES = {429: "Number of request tokens has exceeded your per-minute rate limit.",
            500: "Internal server error", 529: "Overloaded"}


@dataclass(frozen=True)
class Fault(gemini_faults.Fault):
    """How a model misbehaves: "429" (Retry-After: `retry_after` seconds), "500", "529" (overloaded_error), or
    "hang" (the request is read and never answered, until the stand-in stops). `times`: only the first N
    matching requests; None: all of them."""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; valid: {', '.join(KINDS)}")


class StandIn(gemini_standin.StandIn):
    """A running stand-in: its `url`, and a log of every request (method, path, status: 0 for one never
    answered, model, kind: get / chat / judge / unknown-model / rejected-key, the fault and marker it met, and
    for an answer the `tokens` its usage reported, in and out), logged and counted as the Gemini stand-in's."""

    def __init__(self, models: Iterable[str], faults: Mapping[str, Mapping[str, Fault]], reject_keys: Iterable[str],
                 roles: Optional[dict] = None):
        self.models, self.reject_keys = list(models), set(reject_keys)
        self.faults = gemini_faults.Faults(faults)
        self.chat = RulesChatModel(roles=bundled_roles() if roles is None else roles)
        self.requests: list[dict] = []
        self.lock, self.closing = threading.Lock(), threading.Event()
        self.ids = itertools.count(1)
        self.url = ""


def error_body(status: int, message: str) -> dict:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def text_of(content: Any) -> str:
    """A message's (or a tool result's) content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def last_user_text(messages: list[dict]) -> str:
    """The text of the last user turn that has text (a turn carrying tool results alone has none)."""
    for message in reversed(messages):
        if message.get("role") == "user" and text_of(message.get("content")):
            return text_of(message.get("content"))
    return ""


def to_langchain(body: dict) -> list[BaseMessage]:
    """A Messages API request as LangChain messages: the system prompt, user text, the assistant's tool_use
    blocks as tool calls, and the tool_result blocks as ToolMessages paired with them by id."""
    out: list[BaseMessage] = [SystemMessage(text_of(body["system"]))] if body.get("system") else []
    names: dict[str, str] = {}
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            calls = [{"name": b["name"], "args": b.get("input") or {}, "id": b["id"], "type": "tool_call"}
                     for b in blocks if b.get("type") == "tool_use"]
            names.update({c["id"]: c["name"] for c in calls})
            out.append(AIMessage(text_of(content), tool_calls=calls))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                out.append(ToolMessage(text_of(block.get("content")), tool_call_id=block["tool_use_id"],
                                       name=names.get(block["tool_use_id"])))
        if text_of(content):
            out.append(HumanMessage(text_of(content)))
    return out


def openai_tools(body: dict) -> list[dict]:
    """Anthropic tool definitions in the OpenAI shape the rules model reads."""
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t.get("input_schema") or {}}}
            for t in body.get("tools") or []]


def message(model: str, number: int, blocks: list[dict], stop: str, tokens: tuple[int, int]) -> dict:
    """A Messages API answer."""
    return {"id": f"msg_standin_{number}", "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, *args) -> None:  # quiet: tests read the request log instead
        pass

    reply = gemini_standin.Handler.reply  # logs the request, then answers JSON with the given headers

    def keyed(self) -> bool:
        """The request carries a key the stand-in takes; else it is answered 401 (False)."""
        bearer = self.headers.get("Authorization", "")
        key = self.headers.get("x-api-key") or (bearer[len("Bearer "):] if bearer.startswith("Bearer ") else "")
        if not key:
            self.reply(401, error_body(401, "x-api-key header is required"))
        elif key in self.server.standin.reject_keys:
            self.reply(401, error_body(401, "invalid x-api-key"), kind="rejected-key")
        return bool(key) and key not in self.server.standin.reject_keys

    def served(self, model: str) -> bool:
        """The stand-in serves `model`; else it is answered 404 (False)."""
        if model in self.server.standin.models:
            return True
        self.reply(404, error_body(404, f"model: {model}"), model=model, kind="unknown-model")
        return False

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if not self.keyed():
            return
        if not path.startswith("/v1/models/"):
            return self.reply(404, error_body(404, f"stand-in: no such endpoint {path}"))
        model = path[len("/v1/models/"):]
        if self.served(model):
            self.reply(200, {"type": "model", "id": model, "display_name": f"{model} (stand-in)",
                             "created_at": "2025-01-01T00:00:00Z"}, model=model, kind="get")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        path = urlsplit(self.path).path
        if not self.keyed():
            return
        if path != "/v1/messages":
            return self.reply(404, error_body(404, f"stand-in: no such endpoint {path}"))
        if self.served(body.get("model", "")):
            self.answer(body)

    def answer(self, body: dict) -> None:
        """A Messages request's answer: its fault, or the judge's or the rules model's message."""
        standin, model = self.server.standin, body["model"]
        judged = bool((body.get("output_config") or {}).get("format"))
        text = last_user_text(body.get("messages") or [])
        fault, marker = standin.faults.fault_for(model, text)
        record = {"model": model, "kind": "judge" if judged else "chat", "fault": fault.kind if fault else "",
                  "marker": marker}
        if fault and fault.kind == "hang":
            standin.log(method=self.command, path=urlsplit(self.path).path, status=0, **record)
            standin.closing.wait()  # until the stand-in stops: the client gives up first
            self.close_connection = True
            return
        if fault:
            status = int(fault.kind)
            headers = {"Retry-After": f"{fault.retry_after:g}"} if status == 429 else None
            return self.reply(status, error_body(status, MESSAGES[status]), headers, **record)
        try:
            answer = self.judge(body) if judged else self.rules(body)
        except (lexical_judge.UnknownRequest, ValueError, KeyError) as e:
            return self.reply(400, error_body(400, f"stand-in: {e}"), **record)
        self.reply(200, answer, tokens=(answer["usage"]["input_tokens"], answer["usage"]["output_tokens"]),
                   **record)

    def rules(self, body: dict) -> dict:
        standin = self.server.standin
        ai = standin.chat._generate(to_langchain(body), tools=openai_tools(body)).generations[0].message
        number = next(standin.ids)
        blocks = [{"type": "text", "text": ai.text}] if ai.text else []
        blocks += [{"type": "tool_use", "id": f"toolu_standin_{number}_{i}", "name": c["name"], "input": c["args"]}
                   for i, c in enumerate(ai.tool_calls)]
        counts = ai.usage_metadata or {}
        return message(body["model"], number, blocks, "tool_use" if ai.tool_calls else "end_turn",
                       (counts.get("input_tokens", 0), counts.get("output_tokens", 0)))

    def judge(self, body: dict) -> dict:
        prompt = "\n".join(text_of(m.get("content")) for m in body.get("messages") or [])
        schema = body["output_config"]["format"].get("schema") or {}
        kind = judge_kind(prompt, schema_title(schema, prompt))
        text = judge_text(kind, lexical_judge.HANDLERS[kind](prompt))
        return message(body["model"], next(self.server.standin.ids), [{"type": "text", "text": text}], "end_turn",
                       (len(words(prompt)), len(words(text))))


@contextmanager
def serve(models: Iterable[str] = ("claude-haiku-4-5",), faults: Optional[Mapping[str, Mapping[str, Fault]]] = None,
          reject_keys: Iterable[str] = (), roles: Optional[dict] = None) -> Iterator[StandIn]:
    """Run a stand-in on a free port of 127.0.0.1 serving `models`. `faults[model][marker]` is the Fault that
    model shows for requests whose last user text contains `marker`; `reject_keys` are API keys it refuses;
    `roles` are the tool roles its rules model is told (default: the bundled example's)."""
    with on_loopback(Handler, StandIn(models, faults or {}, reject_keys, roles)) as standin:
        try:
            yield standin
        finally:
            standin.closing.set()  # a held request's thread ends

"""A stand-in Anthropic API server on 127.0.0.1 for tests: the real Messages API the anthropic SDK speaks,
answered by the offline backends. Point the real clients at it with ANTHROPIC_BASE_URL.

- `POST /v1/messages` with `output_config.format` (DeepEval's AnthropicModel asking for structured output): the
  `lexical` judge, on the schema class the format names (judge_requests.py, shared by every stand-in); any
  other request (ChatAnthropic in `create_agent`): the `rules` chat
  model, its tool calls sent as `tool_use` blocks and the agent's `tool_result` blocks read back as ToolMessages.
- `GET /v1/models/ID`: the model's metadata (anthropic `models.retrieve`), 404 for a model it does not serve.

- Message Batches (`POST /v1/messages/batches`, `GET .../ID`, `GET .../ID/results`): anthropic_batch.py.

`usage` carries the offline backends' own counts, so tokens match an offline run. No key (`x-api-key`, or
`Authorization: Bearer` as anthropic 2.x sends it), or one in `reject_keys`, is answered 401 as Anthropic
answers it. `faults` makes a model misbehave for requests whose last user text contains a marker (Fault).
`serve()` starts it; `StandIn.requests` logs every request it answered (or held).
"""
import itertools
import json
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Optional
from urllib.parse import urlsplit

from whichstage.offline import lexical_judge
from whichstage.offline.models import RulesChatModel
from whichstage.standins import gemini as gemini_standin, gemini_faults
from whichstage.standins.anthropic_batch import BatchRoutes
from whichstage.standins.anthropic_wire import error_body, last_user_text, message, openai_tools, text_of, \
    to_langchain
from whichstage.standins.judge_requests import answer
from whichstage.standins.ollama import QuietHandler, bundled_roles, on_loopback

KINDS = ("429", "500", "529", "hang", "refusal", "bad-json", "batch-expired")
BATCH_PATH = re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)(?P<results>/results)?$")
MESSAGES = {429: "Number of request tokens has exceeded your per-minute rate limit.",
            500: "Internal server error", 529: "Overloaded"}


@dataclass(frozen=True)
class Fault(gemini_faults.Fault):
    """How a model misbehaves: "429" (Retry-After: `retry_after` seconds), "500", "529" (overloaded_error), or
    "hang" (the request is read and never answered, until the stand-in stops), "refusal" (stop_reason refusal,
    no content), "bad-json" (a judge's answer cut off mid-JSON); in a batch each request meets
    its fault as /v1/messages would (an error becomes its `errored` result), and "batch-expired" ends a whole
    batch holding a matching request with every request `expired`. `times`: only the first N matching
    requests (batches); None: all of them."""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; valid: {', '.join(KINDS)}")


class StandIn(gemini_standin.StandIn):
    """A running stand-in: its `url`, and a log of every request (method, path, status: 0 for one never
    answered, model, kind: get / chat / judge / unknown-model / rejected-key, the fault and marker it met, and
    for an answer the `tokens` its usage reported, in and out), logged and counted as the Gemini stand-in's."""

    def __init__(self, models: Iterable[str], faults: Mapping[str, Mapping[str, Fault]], reject_keys: Iterable[str],
                 roles: Optional[dict] = None, batch_polls: int = 0):
        self.models, self.reject_keys, self.batch_polls = list(models), set(reject_keys), batch_polls
        self.jobs: dict = {}  # message batches by id
        self.faults = gemini_faults.Faults(faults)
        self.chat = RulesChatModel(roles=bundled_roles() if roles is None else roles)
        self.requests: list[dict] = []
        self.lock, self.closing = threading.Lock(), threading.Event()
        self.ids = itertools.count(1)
        self.url = ""


class Handler(BatchRoutes, QuietHandler):
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
        batch = BATCH_PATH.match(path)
        if batch:
            return self.batch_results(batch["id"]) if batch["results"] else self.batch_get(batch["id"])
        if not path.startswith("/v1/models/"):
            return self.reply(404, error_body(404, f"stand-in: no such endpoint {path}"))
        model = path[len("/v1/models/"):]
        if self.served(model):
            self.reply(200, {"type": "model", "id": model, "display_name": f"{model} (stand-in)",
                             "created_at": "2025-01-01T00:00:00Z"}, model=model, kind="get")

    def do_POST(self) -> None:
        body = json.loads(self.body() or b"{}")
        path = urlsplit(self.path).path
        if not self.keyed():
            return
        if path == "/v1/messages/batches":
            return self.batch_create(body)
        if path != "/v1/messages":
            return self.reply(404, error_body(404, f"stand-in: no such endpoint {path}"))
        if self.served(body.get("model", "")):
            self.answer(body)

    def answer(self, body: dict) -> None:
        """Answer a Messages request: its fault (held unanswered for "hang"), or the model's message."""
        status, answer, headers, record = self.outcome(body)
        if status == 0:
            self.server.standin.log(method=self.command, path=urlsplit(self.path).path, status=0, **record)
            self.server.standin.closing.wait()  # until the stand-in stops: the client gives up first
            self.close_connection = True
            return
        self.reply(status, answer, headers, **record)

    def outcome(self, body: dict) -> tuple[int, dict, Optional[dict], dict]:
        """What a Messages request is answered (status, body, headers) and its log record's fields; status 0
        for a request never answered. A batch's requests are answered so too (anthropic_batch.py)."""
        model = body.get("model", "")
        judged = bool((body.get("output_config") or {}).get("format"))
        fault, marker = self.server.standin.faults.fault_for(model, last_user_text(body.get("messages") or []))
        record = {"model": model, "kind": "judge" if judged else "chat", "fault": fault.kind if fault else "",
                  "marker": marker}
        if fault and fault.kind == "hang":
            return 0, {}, None, record
        if fault and fault.kind.isdigit():
            status = int(fault.kind)
            headers = {"Retry-After": f"{fault.retry_after:g}"} if status == 429 else None
            return status, error_body(status, MESSAGES[status]), headers, record
        try:
            answer = self.judge(body) if judged else self.rules(body)
        except (lexical_judge.UnknownRequest, ValueError, KeyError) as e:
            return 400, error_body(400, f"stand-in: {e}"), None, record
        if fault and fault.kind == "refusal":
            answer = {**answer, "content": [], "stop_reason": "refusal"}
        if fault and fault.kind == "bad-json":  # cut off mid-answer, as when a model stops early
            answer["content"] = [{**b, "text": b["text"][:len(b["text"]) // 2]} for b in answer["content"]]
        return 200, answer, None, {**record, "tokens": (answer["usage"]["input_tokens"],
                                                        answer["usage"]["output_tokens"])}

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
        text, tokens_in, tokens_out = answer(prompt, schema)
        return message(body["model"], next(self.server.standin.ids), [{"type": "text", "text": text}], "end_turn",
                       (tokens_in, tokens_out))


@contextmanager
def serve(models: Iterable[str] = ("claude-haiku-4-5",), faults: Optional[Mapping[str, Mapping[str, Fault]]] = None,
          reject_keys: Iterable[str] = (), roles: Optional[dict] = None, batch_polls: int = 0,
          port: int = 0) -> Iterator[StandIn]:
    """Run a stand-in on `port` of 127.0.0.1 (0: a free one) serving `models`. `faults[model][marker]` is the
    Fault that model shows for requests whose last user text contains `marker`; `reject_keys` are API keys it
    refuses; `roles` are the tool roles its rules model is told (default: the project's in the current folder);
    a message batch is in progress for its first `batch_polls` gets."""
    with on_loopback(Handler, StandIn(models, faults or {}, reject_keys, roles, batch_polls), port) as standin:
        try:
            yield standin
        finally:
            standin.closing.set()  # a held request's thread ends

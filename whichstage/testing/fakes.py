"""Fake models for tests, as inspect_ai's mockllm: every model the harness builds by name (the offline backends
`rules`, `hash`, `lexical` in the tests) still answers, and a test can count its calls by kind and label, fail
chosen calls, or answer chosen chat calls with a text of its own and chosen judge calls with the fields of
the schema they ask for (`judge_reply`). Nothing inside the harness is patched: the
models are wrapped where whichstage/providers/build.py builds them (its MODEL_HOOKS).

    def test_a_judge_outage_makes_the_run_incomplete(fake_models, live_project):
        fake_models.fail(lambda call: call.kind == "judge", TimeoutError("read timed out"))
        assert evaluate.main(["--live", "--rerecord", "--quiet"]) == evaluate.EXIT_INCOMPLETE
        assert fake_models.count("chat") > 0  # the agent still ran

`runs()` and `measurements()` read the calls as the runs a recording pays for: the agent runs (by question) and
the judge's measurements (by metric), so a test can say what a live run paid again without patching the
harness's functions. What makes no model call (DeepEval's tool score on names, BM25) is not seen here: read
what the run recorded for it.
"""
import contextlib
import threading
from typing import Any, Callable, Iterator, NamedTuple, Optional


class Call(NamedTuple):
    """One model call: its kind ("chat", "embed" or "judge"), what it is about, its input, and the name the model
    was built for (`rules`, `hash`, `lexical`, `gemini-3.8-flash`: which of two judges was asked).
    - chat: label the question the agent answers (the last user message); text the prompt's last message
      (the question itself on a run's first call, a tool's output after it);
    - embed: label "query" or "documents"; text the text (documents joined by blank lines);
    - judge: label "<metric>/<schema>", the request as the lexical judge reads it ("faithfulness/Claims",
      "g_eval/ReasonScore" for a behaviour or a criterion, "facts/Verdicts"); text the prompt; schema the
      schema class asked for (None elsewhere)."""
    kind: str
    label: str
    text: str
    schema: Any = None
    model: str = ""


def starts_run(call: Call) -> bool:
    """Whether `call` is an agent run's first model call: a chat call whose prompt ends with the question (a
    follow-up's earlier turns come before it; after a tool call the prompt ends with the tool's output). A rule
    on it stops a run before any of its calls is paid."""
    return call.kind == "chat" and call.text == call.label


# The request each judge metric makes first, once per measurement whatever it then finds (DeepEval 4.3's
# metrics and the facts metric, by the metric's name in a Call's label; a GEval, as a behaviour judgement or a
# project's criterion, asks once): counting these counts the measurements.
FIRST_REQUEST = {"faithfulness": "Truths", "answer_relevancy": "Statements", "contextual_precision": "Verdicts",
                 "contextual_recall": "Verdicts", "facts": "Verdicts", "g_eval": "ReasonScore"}


def measurement_of(call: Call) -> Optional[str]:
    """The metric whose measurement `call` starts ("faithfulness" for the strict one too, "g_eval" for a
    behaviour or a criterion), or None for any other call."""
    if call.kind != "judge":
        return None
    metric, _, schema = call.label.partition("/")
    return metric if FIRST_REQUEST.get(metric) == schema else None


def _chat_call(messages, *args, **kwargs) -> Call:
    from langchain_core.messages import HumanMessage

    asked = [m for m in messages if isinstance(m, HumanMessage)]
    return Call("chat", asked[-1].text if asked else "", messages[-1].text if messages else "")


def _judge_call(prompt, schema=None, *args, **kwargs) -> Call:
    from whichstage.offline.lexical_judge import request_kind

    return Call("judge", "/".join(request_kind(schema)) if schema is not None else "text", str(prompt), schema)


# Per kind, the methods every call goes through (the async ones of the offline backends call these), and how
# each one's arguments read as a Call.
METHODS: dict[str, dict[str, Callable[..., Call]]] = {
    "chat": {"_generate": _chat_call},
    "embed": {"embed_documents": lambda texts, *a, **k: Call("embed", "documents", "\n\n".join(texts)),
              "embed_query": lambda text, *a, **k: Call("embed", "query", text)},
    "judge": {"generate": _judge_call},
}


def _chat_reply(text: str):
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class FakeModels:
    """The calls answered so far (`calls`, in the order they returned) and the rules for the next ones."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._rules: list[tuple[Callable[[Call], bool], Callable[[Call], Optional[str]]]] = []
        self._lock = threading.Lock()
        self._classes: dict[tuple[str, str, type], type] = {}

    def on_call(self, when: Callable[[Call], bool], action: Callable[[Call], Any]) -> None:
        """Before each call `when` holds for, run `action(call)`: it may raise (the call fails), return None (the
        model answers) or return the answer instead: for a chat call a text, for a judge call the fields of the
        schema it asks for."""
        self._rules.append((when, action))

    def fail(self, when: Callable[[Call], bool], error: BaseException) -> None:
        """Raise `error` instead of each call `when` holds for; the model is not asked."""
        def raise_(call: Call) -> None:
            raise error
        self.on_call(when, raise_)

    def reply(self, when: Callable[[Call], bool], text: str) -> None:
        """Answer each chat call `when` holds for with `text` (no tool calls) instead of the model."""
        self.on_call(when, lambda call: text)

    def judge_reply(self, when: Callable[[Call], bool], fields: dict) -> None:
        """Answer each judge call `when` holds for with `fields`, validated by the schema it asks for."""
        self.on_call(when, lambda call: fields)

    def count(self, kind: Optional[str] = None, label: Optional[str] = None) -> int:
        """How many calls were answered, of this kind and label when given."""
        with self._lock:
            return sum((kind is None or c.kind == kind) and (label is None or c.label == label) for c in self.calls)

    def runs(self) -> list[str]:
        """The question of each agent run whose first call was answered, in that order (counterfactual runs and
        repeats too: each is a run)."""
        with self._lock:
            return [c.label for c in self.calls if starts_run(c)]

    def measurements(self) -> list[str]:
        """The metric of each judge measurement started and answered so far, in that order (measurement_of)."""
        with self._lock:
            return [m for m in map(measurement_of, self.calls) if m is not None]

    def reset(self) -> list[Call]:
        """The calls answered so far; then forget them and every rule."""
        with self._lock:
            calls, self.calls, self._rules = self.calls, [], []
        return calls

    def wrap(self, kind: str, name: str, model: Any) -> Any:
        """A providers.MODEL_HOOKS hook: the model, its class swapped for a subclass whose calls pass here."""
        key = (kind, name, type(model))
        if key not in self._classes:
            base = type(model)
            methods = {method: self._through(kind, name, getattr(base, method), describe)
                       for method, describe in METHODS[kind].items()}
            self._classes[key] = type(f"Fake{base.__name__}", (base,), methods)
        model.__class__ = self._classes[key]
        return model

    def _through(self, kind: str, name: str, real: Callable, describe: Callable[..., Call]) -> Callable:
        fake = self

        def method(model, *args, **kwargs):
            call = describe(*args, **kwargs)._replace(model=name)
            answer = fake._before(call)
            if answer is None:
                value = real(model, *args, **kwargs)
            elif kind == "chat" and isinstance(answer, str):
                value = _chat_reply(answer)
            elif kind == "judge" and isinstance(answer, dict) and call.schema is not None:
                value = call.schema.model_validate(answer)
            else:
                raise TypeError(f"a chat call takes a text, a judge call its schema's fields: not {answer!r}")
            with fake._lock:
                fake.calls.append(call)
            return value
        return method

    def _before(self, call: Call) -> Any:
        answer = None
        for when, action in list(self._rules):
            if when(call):
                said = action(call)
                answer = said if answer is None else answer  # the first rule's text wins
        return answer


@contextlib.contextmanager
def installed() -> Iterator[FakeModels]:
    """Within the block, every model providers.py builds is wrapped by one FakeModels."""
    from whichstage.providers import build as providers

    fake = FakeModels()
    providers.MODEL_HOOKS.append(fake.wrap)
    try:
        yield fake
    finally:
        providers.MODEL_HOOKS.remove(fake.wrap)

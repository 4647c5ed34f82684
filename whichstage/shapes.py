"""The shape of every recorded value, checked when a recording or a journal is read: a value edited by hand or
damaged on disk is refused naming the entry and the field, never a traceback later. Pure, standard library.

`problem(entry, value)` returns "value.answer: expected a string, got 123" or None, by the entry's kind
(agent/, tools/, judge/, ladder/); `verdict_problem` checks a calibration score.

The fields are those of the models `whichstage.model.trace.Trace` and `Verdict`, checked here by hand because
the replay reads every recorded value and may not import pydantic: importing it and the models costs about
90 ms of CPU, against 108 ms for a whole warm replay of the bundled project (docs/measurements.md).
tests/project/test_model.py holds the two to the same fields.
"""
from typing import Any, Optional

NUMBER = (int, float)


def kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def expect(value: Any, types: tuple, field: str, what: str, optional: bool = False) -> Optional[str]:
    if value is None and optional:
        return None
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        return f"{field}: expected {what}, got {kind(value) if not isinstance(value, (str, int, float)) else repr(value)}"
    return None


def first(*problems: Optional[str]) -> Optional[str]:
    for problem in problems:
        if problem:
            return problem
    return None


def trace_problem(value: Any) -> Optional[str]:
    """An agent run: answer, tool_calls [{name, args}], tool_outputs [{tool, content, artifact?, callbacks?}],
    usage {input_tokens, output_tokens}, agent_s, proposed? [{tool, args}]."""
    if not isinstance(value, dict):
        return expect(value, (dict,), "value", "an object (a trace)")
    found = first(expect(value.get("answer"), (str,), "value.answer", "a string"),
                  expect(value.get("tool_calls"), (list,), "value.tool_calls", "a list"),
                  expect(value.get("tool_outputs"), (list,), "value.tool_outputs", "a list"),
                  expect(value.get("usage", {}), (dict,), "value.usage", "an object"),
                  expect(value.get("agent_s"), NUMBER, "value.agent_s", "a number of seconds", optional=True),
                  expect(value.get("proposed", []), (list,), "value.proposed", "a list"))
    if found:
        return found
    found = first(named_calls(value.get("proposed", []), "value.proposed", "tool", optional=True),
                  named_calls(value["tool_calls"], "value.tool_calls", "name"))
    if found:
        return found
    for i, output in enumerate(value["tool_outputs"]):
        at = f"value.tool_outputs[{i}]"
        found = expect(output, (dict,), at, "an object") or first(
            expect(output.get("tool"), (str,), f"{at}.tool", "a string", optional=True),
            expect(output.get("content"), (str,), f"{at}.content", "a string"),
            *(pages_problem(output[source], f"{at}.{source}") for source in ("artifact", "callbacks")
              if source in output))
        if found:
            return found
    for field, count in value.get("usage", {}).items():
        found = expect(count, (int,), f"value.usage.{field}", "a whole number")
        if found:
            return found
    return None


def named_calls(calls: list, at: str, name: str, optional: bool = False) -> Optional[str]:
    """The first problem of a list of calls (tool calls, proposed actions): each an object with a string `name`
    field (absent if `optional`) and an `args` object."""
    for i, call in enumerate(calls):
        where = f"{at}[{i}]"
        found = expect(call, (dict,), where, "an object") or first(
            expect(call.get(name), (str,), f"{where}.{name}", "a string", optional=optional),
            expect(call.get("args"), (dict,), f"{where}.args", "an object"))
        if found:
            return found
    return None


def pages_problem(pages: Any, at: str) -> Optional[str]:
    if not isinstance(pages, list):
        return expect(pages, (list,), at, "a list of pages")
    for i, page in enumerate(pages):
        found = expect(page, (dict,), f"{at}[{i}]", "an object") or first(
            expect(page.get("id"), (str,), f"{at}[{i}].id", "a string", optional=True),
            expect(page.get("text"), (str,), f"{at}[{i}].text", "a string"))
        if found:
            return found
    return None


def verdict_problem(value: Any) -> Optional[str]:
    """A judged score (a judge metric, DeepEval's tool score, a calibration score): score, reason, and the
    judge's time, tokens and cost where recorded."""
    if not isinstance(value, dict):
        return expect(value, (dict,), "value", "an object (a score and its reason)")
    if "score" not in value:
        return "value.score: missing"
    return first(expect(value["score"], NUMBER, "value.score", "a number", optional=True),
                 expect(value.get("reason"), (str,), "value.reason", "a string", optional=True),
                 *(expect(value.get(f), NUMBER, f"value.{f}", "a number", optional=True)
                   for f in ("judge_s", "cost")),
                 *(expect(value.get(f), (int,), f"value.{f}", "a whole number", optional=True)
                   for f in ("tokens_in", "tokens_out")))


def ranking_problem(value: Any) -> Optional[str]:
    if not isinstance(value, list):
        return expect(value, (list,), "value", "a list of page ids")
    return next((f"value[{i}]: expected a page id, got {kind(p)}" for i, p in enumerate(value)
                 if not isinstance(p, str)), None)


def index_problem(value: Any) -> Optional[str]:
    """The hash of each part of a dependency (`index/pages`: each page's), by its id."""
    if not isinstance(value, dict):
        return expect(value, (dict,), "value", "an object (a hash by page id)")
    return next((f"value[{part!r}]: expected a hash, got {kind(h)}" for part, h in value.items()
                 if not isinstance(h, str)), None)


KINDS = {"agent": trace_problem, "tools": verdict_problem, "judge": verdict_problem, "ladder": ranking_problem,
         "index": index_problem}


def problem(entry: str, value: Any) -> Optional[str]:
    """What is wrong with a recorded value of an evaluate.py recording, or None."""
    check = KINDS.get(entry.split("/", 1)[0])
    return f"unknown kind of entry (valid: {', '.join(KINDS)})" if check is None else check(value)

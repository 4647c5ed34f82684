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
# How a field may be left out: REQUIRED (absent or null is wrong), OMITTABLE (absent is fine, null is wrong),
# NULLABLE (absent or null is fine).
REQUIRED, OMITTABLE, NULLABLE = "required", "omittable", "nullable"
# Each object's fields as (name, types, what is expected, how it may be left out), checked in this order.
TRACE = (("answer", (str,), "a string", REQUIRED), ("tool_calls", (list,), "a list", REQUIRED),
         ("tool_outputs", (list,), "a list", REQUIRED), ("usage", (dict,), "an object", OMITTABLE),
         ("agent_s", NUMBER, "a number of seconds", NULLABLE), ("proposed", (list,), "a list", OMITTABLE))
CALL = (("name", (str,), "a string", REQUIRED), ("args", (dict,), "an object", REQUIRED))
PROPOSAL = (("tool", (str,), "a string", NULLABLE), ("args", (dict,), "an object", REQUIRED))
OUTPUT = (("tool", (str,), "a string", NULLABLE), ("content", (str,), "a string", REQUIRED))
PAGE = (("id", (str,), "a string", NULLABLE), ("text", (str,), "a string", REQUIRED))
VERDICT = (("score", NUMBER, "a number", NULLABLE), ("reason", (str,), "a string", NULLABLE),
           ("judge_s", NUMBER, "a number", NULLABLE), ("cost", NUMBER, "a number", NULLABLE),
           ("tokens_in", (int,), "a whole number", NULLABLE), ("tokens_out", (int,), "a whole number", NULLABLE))
Fields = tuple[tuple[str, tuple, str, str], ...]


def kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def expected(value: Any, what: str) -> str:
    """'expected a string, got 123'."""
    return f"expected {what}, got {kind(value) if not isinstance(value, (str, int, float)) else repr(value)}"


def fields_problem(value: dict, fields: Fields) -> Optional[str]:
    """The first of `fields` the object holds wrongly, as '.FIELD: expected ...' (the path is built only for a
    problem: a replay checks every entry it reads), or None."""
    for name, types, what, may in fields:
        found = value.get(name)
        if found is None:
            if may == NULLABLE or may == OMITTABLE and name not in value:
                continue
        elif isinstance(found, types) and type(found) is not bool:  # JSON's true is not a number
            continue
        return f".{name}: {expected(found, what)}"
    return None


def objects_problem(items: list, fields: Fields, more=None) -> Optional[str]:
    """The first problem of a list of objects, as '[I].FIELD: expected ...': each an object holding `fields`
    rightly, and what `more(item)` finds wrong beyond them."""
    for i, item in enumerate(items):
        found = fields_problem(item, fields) or (more and more(item)) if isinstance(item, dict) else \
            f": {expected(item, 'an object')}"
        if found:
            return f"[{i}]{found}"
    return None


def trace_problem(value: Any) -> Optional[str]:
    """An agent run: answer, tool_calls [{name, args}], tool_outputs [{tool, content, artifact?, callbacks?}],
    usage {input_tokens, output_tokens}, agent_s, proposed? [{tool, args}]."""
    if not isinstance(value, dict):
        return f"value: {expected(value, 'an object (a trace)')}"
    found = fields_problem(value, TRACE)
    if found:
        return f"value{found}"
    for field, fields in (("proposed", PROPOSAL), ("tool_calls", CALL)):
        found = objects_problem(value.get(field, ()), fields)
        if found:
            return f"value.{field}{found}"
    found = objects_problem(value["tool_outputs"], OUTPUT, output_pages)
    if found:
        return f"value.tool_outputs{found}"
    return next((f"value.usage.{field}: {expected(count, 'a whole number')}"
                 for field, count in value.get("usage", {}).items()
                 if not isinstance(count, int) or type(count) is bool), None)


def output_pages(output: dict) -> Optional[str]:
    """What is wrong with the pages a tool output carries (its artifact, its callbacks' pages)."""
    for source in ("artifact", "callbacks"):
        if source in output:
            pages = output[source]
            found = objects_problem(pages, PAGE) if isinstance(pages, list) else \
                f": {expected(pages, 'a list of pages')}"
            if found:
                return f".{source}{found}"
    return None


def verdict_problem(value: Any) -> Optional[str]:
    """A judged score (a judge metric, DeepEval's tool score, a calibration score): score, reason, and the
    judge's time, tokens and cost where recorded."""
    if not isinstance(value, dict):
        return f"value: {expected(value, 'an object (a score and its reason)')}"
    if "score" not in value:
        return "value.score: missing"
    found = fields_problem(value, VERDICT)
    return f"value{found}" if found else None


def ranking_problem(value: Any) -> Optional[str]:
    if not isinstance(value, list):
        return f"value: {expected(value, 'a list of page ids')}"
    return next((f"value[{i}]: expected a page id, got {kind(p)}" for i, p in enumerate(value)
                 if not isinstance(p, str)), None)


def index_problem(value: Any) -> Optional[str]:
    """The hash of each part of a dependency (`index/pages`: each page's), by its id."""
    if not isinstance(value, dict):
        return f"value: {expected(value, 'an object (a hash by page id)')}"
    return next((f"value[{part!r}]: expected a hash, got {kind(h)}" for part, h in value.items()
                 if not isinstance(h, str)), None)


KINDS = {"agent": trace_problem, "tools": verdict_problem, "judge": verdict_problem, "ladder": ranking_problem,
         "index": index_problem}


def problem(entry: str, value: Any) -> Optional[str]:
    """What is wrong with a recorded value of an evaluate.py recording, or None."""
    check = KINDS.get(entry.split("/", 1)[0])
    return f"unknown kind of entry (valid: {', '.join(KINDS)})" if check is None else check(value)

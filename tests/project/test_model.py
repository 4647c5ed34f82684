"""The one typed model (whichstage/model/): the public names are its models, a report a replay writes passes
it, a malformed one is refused in one line naming the field, and the replay's own checker of recorded values
(whichstage/model/replay_check.py, which may not import pydantic) refuses the same fields as the models."""
import copy
import json

import pytest
from pydantic import ValidationError

import whichstage
from conftest import OFFLINE_RUN, PROJECT
from whichstage.cli import run as evaluate
from whichstage.model import replay_check as shapes
from whichstage.model import inputs, report, trace

RECORDING = PROJECT / "recordings" / f"{OFFLINE_RUN}.json"


def test_the_public_types_are_the_models():
    assert (whichstage.Case, whichstage.Trace, whichstage.Row, whichstage.Report) == \
        (inputs.Case, trace.Trace, report.Row, report.Report)


def test_a_report_a_replay_writes_passes_the_report_model(here):
    written = here / "runs" / f"{OFFLINE_RUN}.json"
    written.unlink()
    assert evaluate.main(["--quiet"]) == 0
    assert report.check_report(json.loads(written.read_text())) is None


def test_a_malformed_report_is_refused_in_one_line_naming_the_row_and_field():
    bad = json.loads((PROJECT / "runs" / f"{OFFLINE_RUN}.json").read_text())
    bad["rows"][1]["retrieval"]["recall"] = "all"
    assert report.check_report(bad) == \
        f"rows[1] ({bad['rows'][1]['id']}).retrieval.recall: expected a number, got a string"


@pytest.mark.parametrize("fields, problem", [
    ({"first_failure": "retrieval", "counterfactual": {"available": False}}, "counterfactual.why: missing"),
    ({"first_failure": "retrieval", "counterfactual": {"fixed": False}}, "counterfactual.first_failure: missing"),
    ({"first_failure": "tools", "tools": {"pass": False, "reason": "r"}}, "tools.missing: missing"),
    ({"first_failure": "tools", "tools": {"pass": False, "reason": "r", "deepeval": {}}}, None),
], ids=["no why", "unfixed without its failure", "tools without missing", "deepeval's tools"])
def test_a_row_holds_what_says_why_its_first_failing_stage_failed(fields, problem):
    bad = json.loads((PROJECT / "runs" / f"{OFFLINE_RUN}.json").read_text())
    bad["rows"][0].update(fields)
    expected = problem and f"rows[0] ({bad['rows'][0]['id']}).{problem}"
    assert report.check_report(bad) == expected


def test_a_refusal_shows_a_stage_name_with_braces_as_written():
    bad = json.loads((PROJECT / "runs" / f"{OFFLINE_RUN}.json").read_text())
    bad["rows"][0]["first_failure"] = "{at}"
    assert report.check_report(bad).startswith("rows[0] (backup).first_failure: unknown stage '{at}' (valid: ")


def plain_path(loc: tuple) -> str:
    """A location as shapes.py writes it: 'value.tool_calls[0].name'."""
    return "value" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def model_path(model: type, value: dict) -> str:
    """The field the model refuses first, as shapes.py writes it."""
    with pytest.raises(ValidationError) as refused:
        model.model_validate(value)
    return plain_path(refused.value.errors()[0]["loc"])


TRACE = {"answer": "a", "tool_calls": [{"name": "search_docs", "args": {"query": "q"}}],
         "tool_outputs": [{"tool": "search_docs", "content": "[]", "artifact": [{"id": "p", "text": "t"}],
                           "callbacks": [{"id": "p", "text": "t"}]}],
         "usage": {"input_tokens": 3}, "agent_s": 0.5, "proposed": [{"tool": "file_bug", "args": {"title": "t"}}]}
VERDICT = {"score": 0.5, "reason": "r", "judge_s": 0.1, "cost": 0.0, "tokens_in": 3, "tokens_out": 4}
GONE = object()
# (the model, the field changed, its new value or GONE): every field of the recorded models, each once.
DAMAGE = [
    (trace.Trace, ("answer",), 3), (trace.Trace, ("tool_calls",), {}), (trace.Trace, ("tool_calls", 0, "name"), GONE),
    (trace.Trace, ("tool_calls", 0, "args"), []), (trace.Trace, ("tool_outputs",), "none"),
    (trace.Trace, ("tool_outputs", 0, "tool"), 1), (trace.Trace, ("tool_outputs", 0, "content"), ["x"]),
    (trace.Trace, ("tool_outputs", 0, "artifact"), {}), (trace.Trace, ("tool_outputs", 0, "callbacks", 0), "p"),
    (trace.Trace, ("tool_outputs", 0, "artifact", 0, "text"), GONE),
    (trace.Trace, ("tool_outputs", 0, "callbacks", 0, "id"), 7), (trace.Trace, ("usage",), []),
    (trace.Trace, ("usage", "input_tokens"), 1.5), (trace.Trace, ("agent_s",), "1s"),
    (trace.Trace, ("proposed",), {}), (trace.Trace, ("proposed", 0, "tool"), ["file_bug"]),
    (trace.Trace, ("proposed", 0, "args"), GONE),
    (trace.Verdict, ("score",), GONE), (trace.Verdict, ("score",), "0.5"), (trace.Verdict, ("reason",), 1),
    (trace.Verdict, ("judge_s",), "fast"), (trace.Verdict, ("cost",), True), (trace.Verdict, ("tokens_in",), True),
    (trace.Verdict, ("tokens_out",), 0.5),
]


def damaged(model: type, path: tuple, value: object) -> dict:
    holder = good = copy.deepcopy(TRACE if model is trace.Trace else VERDICT)
    for part in path[:-1]:
        holder = holder[part]
    if value is GONE:
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return good


@pytest.mark.parametrize("model, path, value", DAMAGE, ids=[".".join(map(str, path)) for _, path, _ in DAMAGE])
def test_the_replays_checker_refuses_the_field_the_model_refuses(model, path, value):
    check = shapes.trace_problem if model is trace.Trace else shapes.verdict_problem
    bad = damaged(model, path, value)
    assert check(bad).split(":")[0] == model_path(model, bad) == plain_path(path)


def test_the_checkers_accept_the_same_whole_values():
    assert shapes.trace_problem(TRACE) is None and trace.Trace.model_validate(TRACE)
    assert shapes.verdict_problem(VERDICT) is None and trace.Verdict.model_validate(VERDICT)


def fields(*models: type) -> set:
    return {field.alias or name for model in models for name, field in model.model_fields.items()}


def test_the_comparison_above_covers_every_field_of_the_recorded_models():
    changed = {model: {p for m, path, _ in DAMAGE if m is model for p in path if isinstance(p, str)}
               for model in (trace.Trace, trace.Verdict)}
    held = (trace.ToolCall, trace.ToolOutput, trace.PageRead, trace.Proposal)
    assert changed[trace.Trace] - {"input_tokens"} == fields(trace.Trace, *held)  # usage's keys are any names
    assert changed[trace.Verdict] == fields(trace.Verdict) - {"threshold"}  # a row's, never recorded


def test_every_recorded_trace_and_verdict_passes_the_models():
    models = {"agent": trace.Trace, "judge": trace.Verdict, "tools": trace.Verdict}
    values = [(models[name.split("/")[0]], entry["value"]) for name, entry in
              json.loads(RECORDING.read_text())["entries"].items() if name.split("/")[0] in models]
    assert {model for model, _ in values} == {trace.Trace, trace.Verdict}
    for model, value in values:
        model.model_validate(value)

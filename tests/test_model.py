"""The one typed model (whichstage/model/): the public names are its models, a report a replay writes passes
it, a malformed one is refused in one line naming the field, and the replay's own checker of recorded values
(whichstage/shapes.py, which may not import pydantic) refuses the same fields as the models."""
import copy
import json

import pytest

import whichstage
from conftest import OFFLINE_RUN, PROJECT
from whichstage import evaluate, shapes
from whichstage.model import inputs, report, trace
from whichstage.model.errors import first_problem

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


def plain_path(loc: tuple) -> str:
    """A location as shapes.py writes it: 'value.tool_calls[0].name'."""
    return "value" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def model_path(model: type, value: dict) -> str:
    with pytest.raises(Exception) as refused:
        model.model_validate(value)
    error = refused.value.errors()[0]
    assert first_problem(value, [error])  # one line
    return plain_path(error["loc"])


TRACE = {"answer": "a", "tool_calls": [{"name": "search_docs", "args": {"query": "q"}}],
         "tool_outputs": [{"tool": "search_docs", "content": "[]", "artifact": [{"id": "p", "text": "t"}]}],
         "usage": {"input_tokens": 3}, "agent_s": 0.5}
VERDICT = {"score": 0.5, "reason": "r", "judge_s": 0.1, "tokens_in": 3, "tokens_out": 4}


def put(*path, value=None):
    def change(holder):
        for part in path[:-1]:
            holder = holder[part]
        if value is None:
            del holder[path[-1]]
        else:
            holder[path[-1]] = value
    return change


@pytest.mark.parametrize("model, problem, change", [
    (trace.Trace, shapes.trace_problem, put("answer", value=3)),
    (trace.Trace, shapes.trace_problem, put("tool_calls", value={})),
    (trace.Trace, shapes.trace_problem, put("tool_calls", 0, "name")),
    (trace.Trace, shapes.trace_problem, put("tool_calls", 0, "args", value=[])),
    (trace.Trace, shapes.trace_problem, put("tool_outputs", 0, "content", value=["x"])),
    (trace.Trace, shapes.trace_problem, put("tool_outputs", 0, "artifact", 0, "text")),
    (trace.Trace, shapes.trace_problem, put("usage", "input_tokens", value=1.5)),
    (trace.Trace, shapes.trace_problem, put("agent_s", value="1s")),
    (trace.Verdict, shapes.verdict_problem, put("score")),
    (trace.Verdict, shapes.verdict_problem, put("score", value="0.5")),
    (trace.Verdict, shapes.verdict_problem, put("reason", value=1)),
    (trace.Verdict, shapes.verdict_problem, put("tokens_in", value=True)),
], ids=["answer", "calls", "call name", "call args", "output content", "page text", "tokens", "seconds",
        "no score", "score", "reason", "tokens in"])
def test_the_replays_checker_refuses_the_field_the_model_refuses(model, problem, change):
    good = copy.deepcopy(TRACE if model is trace.Trace else VERDICT)
    assert problem(good) is None and model.model_validate(good)
    change(good)
    assert problem(good).split(":")[0] == model_path(model, good)


def test_every_recorded_trace_and_verdict_passes_the_models():
    models = {"agent": trace.Trace, "judge": trace.Verdict, "tools": trace.Verdict}
    values = [(models[name.split("/")[0]], entry["value"]) for name, entry in
              json.loads(RECORDING.read_text())["entries"].items() if name.split("/")[0] in models]
    assert {model for model, _ in values} == {trace.Trace, trace.Verdict}
    for model, value in values:
        model.model_validate(value)

"""The pipeline's TypedDicts (model/dicts.py) and the pydantic models that validate the same shapes at the edges
(model/inputs.py, trace.py, report.py) name the same fields, and the bundled reports hold no field the
TypedDicts do not declare."""
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from whichstage.model import dicts, inputs, report, trace
from whichstage.project.validate import DEFAULTS

ROOT = Path(__file__).parents[2]
PAIRS = [(dicts.CaseDict, inputs.Case), (dicts.CaseSetDict, inputs.CaseSet), (dicts.TraceDict, trace.Trace),
         (dicts.CallDict, trace.ToolCall), (dicts.OutputDict, trace.ToolOutput), (dicts.VerdictDict, trace.Verdict),
         (dicts.RowDict, report.Row), (dicts.ReportDict, report.Report), (dicts.BehaviourDict, report.Behaviour),
         (dicts.ToolsDict, report.Tools), (dicts.RetrievalDict, report.Retrieval),
         (dicts.InterventionDict, report.Counterfactual), (dicts.DiagnosisDict, report.Diagnosis),
         (dicts.CalibrationCaseDict, inputs.CalibrationCase), (dicts.CalibrationSetDict, inputs.CalibrationSet)]


def model_fields(model: type[BaseModel]) -> set[str]:
    """A model's fields as JSON names them (`pass`, not `passed`)."""
    return {field.alias or name for name, field in model.model_fields.items()}


@pytest.mark.parametrize("typed, model", PAIRS, ids=lambda t: t.__name__)
def test_every_field_the_model_checks_is_declared_for_the_pipeline(typed, model):
    assert model_fields(model) <= set(typed.__annotations__)


def test_a_case_has_the_models_fields_and_no_other():
    assert set(dicts.CaseDict.__annotations__) == model_fields(inputs.Case)


def test_the_fields_a_case_always_has_are_the_required_ones_and_the_filled_defaults():
    required = {name for name, field in inputs.Case.model_fields.items() if field.is_required()}
    assert dicts.CaseDict.__required_keys__ == required | set(DEFAULTS)


def test_a_declared_field_missing_from_the_model_is_found():
    class Narrow(BaseModel):
        id: str
        stray: int

    assert not model_fields(Narrow) <= set(dicts.RowDict.__annotations__)


NESTED = {"behaviour": dicts.BehaviourDict, "tools": dicts.ToolsDict, "retrieval": dicts.RetrievalDict,
          "counterfactual": dicts.InterventionDict, "tools_intervention": dicts.InterventionDict,
          "diagnosis": dicts.DiagnosisDict}


def undeclared(row: dict) -> set[str]:
    """The fields of a report row (and of its stages' objects) that the TypedDicts do not declare."""
    found = {f"row.{k}" for k in row if k not in dicts.RowDict.__annotations__}
    for field, typed in NESTED.items():
        value = row.get(field)
        if isinstance(value, dict):
            found |= {f"{field}.{k}" for k in value if k not in typed.__annotations__}
    for verdict in (row.get("judged") or {}).values():
        found |= {f"judged.{k}" for k in verdict if k not in dicts.VerdictDict.__annotations__}
    return found


def test_an_undeclared_row_field_is_found():
    assert undeclared({"id": "a", "tools": {"pass": True, "odd": 1}}) == {"tools.odd"}


@pytest.mark.parametrize("path", sorted(ROOT.glob("runs/*.all.json")) + sorted(ROOT.glob("examples/*/runs/*.all.json")),
                         ids=lambda p: p.name)
def test_the_bundled_reports_hold_only_declared_fields(path):
    found = json.loads(path.read_text(encoding="utf-8"))
    assert set(found) <= set(dicts.ReportDict.__annotations__)
    assert not set().union(*map(undeclared, found["rows"]))


@pytest.mark.parametrize("path", sorted(ROOT.glob("runs/calibration+*.json")) +
                         sorted(ROOT.glob("examples/*/runs/calibration+*.json")), ids=lambda p: p.name)
def test_the_bundled_calibration_reports_rows_are_as_declared(path):
    rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
    assert rows and all(set(r) == set(dicts.CalibrationRowDict.__annotations__) for r in rows)


@pytest.mark.parametrize("path", sorted(ROOT.glob("runs/*.all.json")) + sorted(ROOT.glob("examples/*/runs/*.all.json")),
                         ids=lambda p: p.name)
def test_a_bundled_summary_holds_the_declared_fields_and_those_at_its_k(path):
    found = json.loads(path.read_text(encoding="utf-8"))
    k, summary = found["k"], found["summary"]
    assert set(summary) - set(dicts.SummaryDict.__annotations__) == {f"hit_at_{k}", f"recall_at_{k}"}
    assert dicts.at_k(summary, "recall", k) == summary[f"recall_at_{k}"]

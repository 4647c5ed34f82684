"""The baseline gate: a saved run's results, and the check that a new run did not regress against them.

A baseline keeps each case's verdicts, so a check decided in code (tools, retrieval, the behaviour stage's
checks in code) that a case passed and now fails is a regression whatever the rates (gate.py has the rules);
the judged stages' pass rates may drop by their tolerance. A baseline records what it was measured with, the
judged stages' thresholds too, and is refused for a run measured any other way.
"""
import json
from pathlib import Path
from typing import NamedTuple, Optional

from whichstage.analysis import gate
from whichstage.model import stages
from whichstage.run import ladder
from whichstage._util.files import read_json
from whichstage.scoring.gating import stage_order, threshold_differences
from whichstage._util.exits import WhichstageError
from whichstage.model.dicts import ReportDict

TOLERANCE = stages.TOLERANCE
CRITERIA_CHANGED = ": a [criteria.NAME] was added, removed or given another rubric, reads or threshold"
MEASURED_WITH = ("cases", "cases_sha", "model", "embedder", "judge", "k", "strict_faithfulness", "criteria")


class BaselineError(WhichstageError):
    """A baseline that cannot be used: missing, malformed, or measured another way."""


class Verdict(NamedTuple):
    regressions: list[str]
    text: str
    result: gate.GateResult
    other: list[str]  # regressions of no case or stage: the retrieval ladder's


def from_report(report: ReportDict, tolerance: float = TOLERANCE) -> dict:
    """The parts of a report a later run is held to."""
    return {"measured_with": {f: report["key"].get(f) for f in MEASURED_WITH}
            | {"threshold": report["threshold"], "thresholds": report.get("thresholds", {}),
               "split": report.get("split", "all")},
            "tolerance": tolerance,
            "pass_rate": report["summary"]["pass_rate"],
            "stages": report["summary"]["stages"],
            "retrieval": {r["id"]: v["recall"] for r in report["rows"] if (v := r.get("retrieval"))},
            "first_failures": {r["id"]: r["first_failure"] for r in report["rows"]},
            "cases": {r["id"]: gate.case_record(r) for r in report["rows"]},
            "ladder": ladder.baseline_part(report["rows"])}


def dumps(baseline: dict) -> str:
    return json.dumps(baseline, indent=2) + "\n"


def load(path: Path) -> dict:
    if not Path(path).exists():
        raise BaselineError(f"{path}: no baseline; write one with --save-baseline")
    data = read_json(path, BaselineError, str(path))
    needed = ("measured_with", "tolerance", "pass_rate", "stages", "retrieval")
    missing = [f for f in needed if f not in data] if isinstance(data, dict) else needed
    if missing:
        raise BaselineError(f"{path}: not a baseline (missing {', '.join(missing)})")
    if "cases" not in data:
        raise BaselineError(f"{path}: saved before the gate held each case (no `cases`); save it again with "
                            "--save-baseline")
    from pydantic import ValidationError

    from whichstage.model.report import Saved

    try:
        Saved.model_validate(data)
    except ValidationError as e:
        error = e.errors()[0]
        raise BaselineError(f"{path}: {'.'.join(str(p) for p in error['loc'])}: {error['msg']}") from None
    return data


def select(reports: list[ReportDict], saved: Optional[dict]) -> ReportDict:
    """The one report a baseline applies to: the only one, or the one of the saved baseline's model."""
    if len(reports) == 1:
        return reports[0]
    if saved:
        names = {f: saved["measured_with"].get(f) for f in ("model", "embedder", "judge")}
        chosen = [r for r in reports if all(r["key"].get(f) == v for f, v in names.items())]
        if chosen:
            return chosen[0]
        raise BaselineError(f"no run of model {names['model']}, embedder {names['embedder']} and judge "
                            f"{names['judge']} to check against the baseline; replay it with --model and "
                            "DOCS_EMBEDDER, "
                            "DOCS_JUDGE")
    raise BaselineError("several runs were replayed; name the one for the baseline with --model, DOCS_EMBEDDER "
                        "or DOCS_JUDGE")


def check(report: ReportDict, baseline: dict, tolerances: Optional[gate.Tolerances] = None) -> Verdict:
    """Regressions of `report` against `baseline`; refuses a baseline measured another way. `tolerances` are
    the project's (evals.toml), else the one the baseline was saved with."""
    current = from_report(report, baseline["tolerance"])
    before, after = baseline["measured_with"], current["measured_with"]
    differs = [f"{f} ({v} -> {after.get(f)}{CRITERIA_CHANGED if f == 'criteria' else ''})" for f, v in before.items()
               if f not in ("threshold", "thresholds") and after.get(f) != v]
    differs += [f"{field} ({a} -> {b})" for field, a, b in threshold_differences(before, after)]
    if differs:
        split = before.get("split")
        hint = f"; run with --split {split}" if split != after.get("split") else \
            "; if the change is deliberate, save a new baseline with --save-baseline FILE"
        raise BaselineError("baseline was measured differently: " + ", ".join(differs) + hint)
    tolerant = [s for s in stage_order(report["rows"]) if s not in stages.IN_CODE]
    saved_rates = {**baseline["stages"], stages.OVERALL: baseline["pass_rate"]}
    result = gate.judge(baseline["cases"], report["rows"], saved_rates,
                        {**current["stages"], stages.OVERALL: current["pass_rate"]}, tolerant,
                        tolerances or gate.Tolerances(baseline["tolerance"]))
    rungs = ladder.regressions(baseline.get("ladder", {}), current["ladder"])
    regressions = [f.text() for f in result.regressions] + rungs
    changed = [f"{case}: {baseline['first_failures'].get(case) or 'pass'} -> {stage or 'pass'}"
               for case, stage in current["first_failures"].items()
               if case in baseline.get("first_failures", {}) and baseline["first_failures"][case] != stage]
    lines = [f"baseline check ({report['key']['model']}): "
             + (f"{len(regressions)} regression(s)" if regressions else "no regression")]
    lines += [f"  REGRESSED {r}" for r in regressions]
    lines += [f"  changed {c}" for c in changed]
    return Verdict(regressions, "\n".join(lines), result, rungs)

"""The baseline gate: a saved run's results, and the check that a new run did not regress against them.

Retrieval is deterministic, so its tolerance is zero: one case that lost an expected page is a regression.
Tools and the judged stages come from sampled models, so their pass rates may drop by TOLERANCE first.
A baseline records what it was measured with, the judged stages' thresholds too, and is refused for a run
measured any other way.
"""
import json
from pathlib import Path
from typing import NamedTuple, Optional

from whichstage import ladder, stages
from whichstage.stages import threshold_differences
from whichstage.cassette import read_json

TOLERANCE = 0.1
CRITERIA_CHANGED = ": a [criteria.NAME] was added, removed or given another rubric, reads or threshold"
MEASURED_WITH = ("cases", "cases_sha", "model", "embedder", "judge", "k", "strict_faithfulness", "criteria")
TOLERANT_STAGES = ("behaviour", "tools", "faithfulness", "contextual_recall", "answer_relevancy", "facts")


class BaselineError(Exception):
    """A baseline that cannot be used: missing, malformed, or measured another way."""


class Verdict(NamedTuple):
    regressions: list[str]
    text: str


def from_report(report: dict, tolerance: float = TOLERANCE) -> dict:
    """The parts of a report a later run is held to."""
    return {"measured_with": {f: report["key"].get(f) for f in MEASURED_WITH}
            | {"threshold": report["threshold"], "thresholds": report.get("thresholds", {}),
               "split": report.get("split", "all")},
            "tolerance": tolerance,
            "pass_rate": report["summary"]["pass_rate"],
            "stages": report["summary"]["stages"],
            "retrieval": {r["id"]: r["retrieval"]["recall"] for r in report["rows"] if r.get("retrieval")},
            "first_failures": {r["id"]: r["first_failure"] for r in report["rows"]},
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
    from pydantic import ValidationError

    from whichstage.model.report import Saved

    try:
        Saved.model_validate(data)
    except ValidationError as e:
        error = e.errors()[0]
        raise BaselineError(f"{path}: {'.'.join(str(p) for p in error['loc'])}: {error['msg']}") from None
    return data


def select(reports: list[dict], saved: Optional[dict]) -> dict:
    """The one report a baseline applies to: the only one, or the one of the saved baseline's model."""
    if len(reports) == 1:
        return reports[0]
    if saved:
        names = {f: saved["measured_with"].get(f) for f in ("model", "embedder", "judge")}
        chosen = [r for r in reports if all(r["key"].get(f) == v for f, v in names.items())]
        if chosen:
            return chosen[0]
        raise BaselineError(f"no run of model {names['model']}, embedder {names['embedder']} and judge "
                            f"{names['judge']} to check against the baseline; replay it with --model and DOCS_EMBEDDER, "
                            "DOCS_JUDGE")
    raise BaselineError("several runs were replayed; name the one for the baseline with --model, DOCS_EMBEDDER "
                        "or DOCS_JUDGE")


def rate_of(stage: dict) -> Optional[float]:
    return stage["passed"] / stage["total"] if stage.get("total") else None


def check(report: dict, baseline: dict) -> Verdict:
    """Regressions of `report` against `baseline`; refuses a baseline measured another way."""
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
    tolerance, regressions = baseline["tolerance"], []
    for case, recall in baseline["retrieval"].items():
        now = current["retrieval"].get(case)
        if now is not None and now < recall:
            regressions.append(f"retrieval: {case} recall@k {recall} -> {now} (tolerance 0)")
    regressions += ladder.regressions(baseline.get("ladder", {}), current["ladder"])
    for stage in (*TOLERANT_STAGES, *stages.criteria_of(report["rows"])):
        before, after = rate_of(baseline["stages"].get(stage, {})), rate_of(current["stages"].get(stage, {}))
        if before is not None and after is not None and after < before - tolerance:
            regressions.append(f"{stage}: pass rate {before:.0%} -> {after:.0%} (tolerance {tolerance:.0%})")
    before, after = rate_of(baseline["pass_rate"]), rate_of(current["pass_rate"])
    if before is not None and after is not None and after < before - tolerance:
        regressions.append(f"overall: pass rate {before:.0%} -> {after:.0%} (tolerance {tolerance:.0%})")
    changed = [f"{case}: {baseline['first_failures'].get(case) or 'pass'} -> {stage or 'pass'}"
               for case, stage in current["first_failures"].items()
               if case in baseline.get("first_failures", {}) and baseline["first_failures"][case] != stage]
    lines = [f"baseline check ({report['key']['model']}): "
             + (f"{len(regressions)} regression(s)" if regressions else "no regression")]
    lines += [f"  REGRESSED {r}" for r in regressions]
    lines += [f"  changed {c}" for c in changed]
    return Verdict(regressions, "\n".join(lines))

"""How a row's verdicts gate: the thresholds a judged verdict is held to, which stage each verdict decides,
and the first failing stage, over the stage table (model/stages.py). Pure, no I/O."""
from typing import Iterable, Optional

from whichstage.model.stages import BEHAVIOUR_JUDGED, PRESUME_AN_ANSWER, STAGES, THRESHOLD
from whichstage.model.dicts import RowDict, VerdictDict


def passes(score: Optional[float], threshold: float = THRESHOLD) -> bool:
    return score is not None and score >= threshold


def criteria_of(rows: Iterable[RowDict]) -> list[str]:
    """The project's own judged criteria (evals.toml `[criteria.NAME]`) that the rows carry, in declared order."""
    return list(dict.fromkeys(name for r in rows for name in r.get("criteria") or {}))


def stage_order(rows: Iterable[RowDict]) -> list[str]:
    """The stages of a run in gating order: the built-in STAGES, then the project's criteria."""
    return [*STAGES, *criteria_of(rows)]


def threshold_of(row: RowDict, name: str) -> float:
    """The score a judged verdict needs: the threshold it carries (with_threshold), else its criterion's own,
    else THRESHOLD."""
    verdict = row.get("judged", {}).get(name) or {}
    return verdict.get("threshold", (row.get("criteria") or {}).get(name, THRESHOLD))


def verdict_passes(verdict: VerdictDict) -> bool:
    """A judged verdict against its own threshold: the one it carries (with_threshold), else THRESHOLD."""
    return passes(verdict.get("score"), verdict.get("threshold", THRESHOLD))


def with_threshold(verdict: VerdictDict, threshold: float) -> VerdictDict:
    """A recorded verdict as a row holds it: with the threshold it is judged against, when not THRESHOLD. The
    recorded score does not depend on it (DeepEval's threshold sets only its `success`, never recorded), so
    a project's thresholds move verdicts at replay and never make an entry stale."""
    return verdict if threshold == THRESHOLD else {**verdict, "threshold": threshold}


def threshold_differences(before: dict, after: dict) -> list[tuple[str, float, float]]:
    """How two runs' thresholds differ in effect, as (field, before, after): `threshold`, the default, and
    `thresholds.STAGE` for a stage either run set its own threshold for. Each dict holds a run's
    `threshold` and `thresholds` (a report's fields, a baseline's measured_with), either absent in an older
    file."""
    defaults = before.get("threshold", THRESHOLD), after.get("threshold", THRESHOLD)
    own = before.get("thresholds") or {}, after.get("thresholds") or {}
    found = [("threshold", *defaults)] if defaults[0] != defaults[1] else []
    for stage in dict.fromkeys([*own[0], *own[1]]):
        a, b = own[0].get(stage, defaults[0]), own[1].get(stage, defaults[1])
        if a != b:
            found.append((f"thresholds.{stage}", a, b))
    return found


def decides_its_stage(row: RowDict, name: str) -> bool:
    """Whether the row's judged verdict `name` passes or fails a stage of its own: not a behaviour judgement
    (the behaviour stage reads those), nor relevancy or recall on a case that expects an abstention."""
    return name not in BEHAVIOUR_JUDGED and not (row.get("expected_behavior") == "abstain"
                                                and name in PRESUME_AN_ANSWER)


def gate_of(row: RowDict, metric: str) -> Optional[str]:
    """The stage a judged metric's verdict decides on this row: its own, 'behaviour' for a behaviour judgement
    (recorded only where the behaviour check reads it), or None when it is reported and never gates."""
    in_order = metric in STAGES or metric in (row.get("criteria") or {})  # stage_order([row])
    if in_order and metric in row.get("judged", {}) and decides_its_stage(row, metric):
        return metric
    return "behaviour" if metric in BEHAVIOUR_JUDGED and row.get("behaviour") is not None else None


def stage_results(row: RowDict) -> dict[str, bool]:
    """Pass or fail of every stage the row has; a stage that does not apply is absent."""
    results = {}
    behaviour, tools, retrieval = row.get("behaviour"), row.get("tools"), row.get("retrieval")
    if behaviour is not None:
        results["behaviour"] = behaviour["pass"]
    if tools is not None:
        results["tools"] = tools["pass"]
    if retrieval is not None:
        results["retrieval"] = retrieval["recall"] == 1.0
    for name, verdict in row.get("judged", {}).items():
        if decides_its_stage(row, name):
            results[name] = passes(verdict["score"], threshold_of(row, name))
    return results


def first_failure(row: RowDict) -> Optional[str]:
    """The earliest failing stage in STAGES order, then the project's criteria, or 'error' when a call never
    completed; contextual precision reports but never gates."""
    if row.get("error"):
        return "error"
    results = stage_results(row)
    return next((stage for stage in stage_order([row]) if results.get(stage) is False), None)

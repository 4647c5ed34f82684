"""The judge intervention without a second judge: which failing judged verdict of a case is in doubt (near its
threshold, or of a metric the project's calibration marks unreliable) and is judged again, and what the
verdict judged again proves. Pure, no I/O."""
from typing import Optional

from whichstage.scoring.gating import passes, threshold_of, verdict_passes
from whichstage.model.dicts import RowDict

# The behaviour stage's judged parts: a behaviour failure made of these alone is a judged verdict too.
BEHAVIOUR_JUDGED = ("abstained", "ignored_planted")


def in_doubt(row: RowDict, within: float, unreliable: frozenset[str] = frozenset()) -> Optional[dict]:
    """The failing verdict a row judges again: {"stage", "score", "threshold", "why"}; None where the first
    failure is no judged verdict, or its verdict is neither within `within` of its threshold nor of an
    unreliable stage (`unreliable`: the stages whose metric the calibration does not pass)."""
    for stage in failing_verdicts(row):
        verdict = row["judged"][stage]
        score, threshold = verdict.get("score"), threshold_of(row, stage)
        if score is None:
            continue
        if within and threshold - score <= within + 1e-9:
            why = f"within {within:g} of its threshold {threshold:g}"
        elif stage in unreliable:
            why = f"the judge's calibration does not pass on {stage}"
        else:
            continue
        return {"stage": stage, "score": score, "threshold": threshold, "why": why}
    return None


def failing_verdicts(row: RowDict) -> list[str]:
    """The judged verdicts the row's first failure consists of: the failing stage's own, or for a behaviour
    failure with no check in code failing, its failing behaviour judgements."""
    first, judged = row.get("first_failure"), row.get("judged") or {}
    if first == "behaviour":
        behaviour = row.get("behaviour")
        if behaviour is None or behaviour.get("in_code") or behaviour["pass"]:
            return []
        return [name for name in BEHAVIOUR_JUDGED if name in judged and not verdict_passes(judged[name])]
    return [first] if isinstance(first, str) and first in judged and first not in BEHAVIOUR_JUDGED else []


def outcome(doubt: dict, again: Optional[dict]) -> Optional[dict]:
    """The recheck as a row carries it: the doubt, the second score and whether it passes; None until the
    verdict judged again is recorded."""
    if again is None:
        return None
    second = again.get("score")
    return {**doubt, "again": second, "flipped": passes(second, doubt["threshold"])}


def judge_cause(row: RowDict) -> Optional[tuple[str, dict]]:
    """A verdict that passes when judged again: the judge is uncertain, the agent not proven at fault."""
    check = row.get("judge_recheck")
    if not check or not check["flipped"]:
        return None
    return "judge", {"intervention": "judged again",
                     "outcome": f"{check['stage']} judged again passes ({check['again']:.2f}, first "
                                f"{check['score']:.2f}, {check['why']}): judge uncertain"}

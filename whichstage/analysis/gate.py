"""The baseline gate's rules, pure: what a run is held to per case and per stage, and what regressed.

A check decided in code over the trace (the tools stage, retrieval, the behaviour stage's checks in code) has
zero tolerance: a case that passed it in the baseline and fails it now is a regression, whatever the rates. A
judged stage's pass rate may drop by its tolerance, unless the exact McNemar test on the paired cases says the
drop is significant at 5% (more cases broke than were fixed), which fails the gate inside the tolerance too.
No I/O.
"""
from dataclasses import dataclass, field
from typing import Mapping, Optional

from whichstage.model.stages import OVERALL, TOLERANCE
from whichstage.scoring.gating import stage_order, stage_results
from whichstage.render.row_view import stage_reason
from whichstage._util.stats import ALPHA, mcnemar_exact, rate
from whichstage.model.dicts import RowDict



@dataclass(frozen=True)
class Tolerances:
    """How far a judged stage's pass rate may drop below the baseline's: `default` (evals.toml `tolerance`),
    or the stage's own (`[tolerances]`)."""
    default: float = TOLERANCE
    stages: Mapping[str, float] = field(default_factory=dict)

    def of(self, stage: str) -> float:
        return self.stages.get(stage, self.default)


@dataclass(frozen=True)
class Finding:
    """One thing the gate found: a case (None for a stage's rate) that regressed or improved at a stage."""
    stage: str
    reason: str
    case: Optional[str] = None

    def text(self) -> str:
        return f"{self.case}: {self.stage}: {self.reason}" if self.case else f"{self.stage}: {self.reason}"


@dataclass(frozen=True)
class StageCheck:
    """A tolerant stage's pass rate before and after, its tolerance, the paired test, and why it regressed."""
    stage: str
    before: dict
    after: dict
    tolerance: float
    test: dict
    regressed: Optional[str] = None
    broke: tuple[Finding, ...] = ()  # the cases that passed the stage in the baseline and fail it now


@dataclass(frozen=True)
class GateResult:
    regressions: list[Finding]
    improvements: list[Finding]
    stages: list[StageCheck]


def case_record(row: RowDict) -> dict:
    """What the baseline keeps of one case: each stage's pass, retrieval's recall, and the checks in code it
    failed."""
    if row.get("error"):
        return {"error": True, "stages": {}, "in_code": []}
    results = stage_results(row)
    record: dict = {"stages": {s: results[s] for s in stage_order([row]) if s in results},
                    "in_code": sorted(in_code_failures(row)),
                    "first_failure": row.get("first_failure")}
    retrieval = row.get("retrieval")
    if retrieval is not None:
        record["recall"] = retrieval["recall"]
    return record


def in_code_failures(row: RowDict) -> dict[str, str]:
    """The row's failed checks in code, by name ('tools', 'behaviour: must_not', ...), each with its reason."""
    if row.get("error"):
        return {}
    found, tools, behaviour = {}, row.get("tools"), row.get("behaviour")
    if tools is not None and not tools["pass"]:
        found["tools"] = stage_reason(row, "tools")
    for check, reason in ((behaviour.get("in_code") if behaviour else None) or {}).items():
        found[f"behaviour ({check})"] = reason
    return found


def case_findings(before: Mapping[str, dict], rows: list[RowDict]) -> tuple[list[Finding], list[Finding]]:
    """The cases that newly fail a check in code, or lost retrieval recall (regressions), and those that newly
    pass one (improvements); a case absent from the baseline, or errored now, is neither."""
    regressions, improvements = [], []
    for row in rows:
        old = before.get(row["id"])
        if old is None or old.get("error") or row.get("error"):
            continue
        now, then = in_code_failures(row), set(old.get("in_code", []))
        regressions += [Finding(check, reason, row["id"]) for check, reason in now.items() if check not in then]
        improvements += [Finding(check, "passes now", row["id"]) for check in sorted(then - set(now))]
        retrieval = row.get("retrieval")
        recall = retrieval["recall"] if retrieval else None
        if recall is not None and old.get("recall") is not None and recall != old["recall"]:
            found = Finding("retrieval", f"recall@k {old['recall']} -> {recall}: {stage_reason(row, 'retrieval')}"
                            if recall < old["recall"] else f"recall@k {old['recall']} -> {recall}", row["id"])
            (regressions if recall < old["recall"] else improvements).append(found)
    return regressions, improvements


def paired(before: Mapping[str, dict], rows: list[RowDict], stage: str) -> dict:
    """The exact McNemar test of one stage (or OVERALL: every stage) on the cases both runs scored."""
    outcomes = []
    for row in rows:
        old = before.get(row["id"])
        if old is None or row.get("error") or old.get("error"):
            continue
        a, b = (old.get("first_failure") is None, row.get("first_failure") is None) if stage == OVERALL else \
            (old["stages"].get(stage), stage_results(row).get(stage))
        if a is not None and b is not None:
            outcomes.append((row["id"], a, b))
    broken = [case for case, a, b in outcomes if a and not b]
    fixed = [case for case, a, b in outcomes if b and not a]
    return {"fixed": len(fixed), "broken": len(broken), "paired": len(outcomes),
            "p": mcnemar_exact(len(broken), len(fixed)), "broken_cases": broken, "fixed_cases": fixed}


def stage_check(stage: str, before: dict, after: dict, tolerance: float, test: dict,
                rows: Mapping[str, RowDict]) -> StageCheck:
    """A tolerant stage's verdict: regressed beyond its tolerance, or significantly by the paired test; `rows`
    by id give the reason of each case that broke."""
    old, new = share(before), share(after)
    why = None
    if old is not None and new is not None and new < old - tolerance - 1e-12:
        why = f"pass rate {old:.0%} -> {new:.0%} (tolerance {tolerance:.0%})"
    elif test["broken"] > test["fixed"] and test["p"] < ALPHA:
        why = (f"{test['broken']} broken, {test['fixed']} fixed of {test['paired']} paired cases: exact McNemar "
               f"p = {test['p']:.2g}, significant at 5% (inside the tolerance {tolerance:.0%})")
    broke = tuple(Finding(stage, broken_reason(rows[case], stage), case) for case in test["broken_cases"]) \
        if why else ()
    return StageCheck(stage, before, after, tolerance, test, why, broke)


def broken_reason(row: RowDict, stage: str) -> str:
    """Why a case that broke at `stage` (OVERALL: its first failing stage) fails it now."""
    if stage == OVERALL:
        first = str(row["first_failure"])  # a case that broke fails somewhere
        return f"fails at {first}: {stage_reason(row, first)}"
    return stage_reason(row, stage)


def share(r: Optional[dict]) -> Optional[float]:
    return r["passed"] / r["total"] if r and r.get("total") else None


def judge(before: Mapping[str, dict], rows: list[RowDict], saved_rates: Mapping[str, dict], rates: Mapping[str, dict],
          stages: list[str], tolerances: Tolerances) -> GateResult:
    """Every regression and improvement of `rows` against the baseline's cases (`before`) and rates; `stages`
    are the tolerant ones (the behaviour stage, for its judgements, and the judged stages), then OVERALL."""
    regressions, improvements = case_findings(before, rows)
    by_id = {row["id"]: row for row in rows}
    checks = [stage_check(s, saved_rates.get(s) or rate(0, 0), rates.get(s) or rate(0, 0), tolerances.of(s),
                          paired(before, rows, s), by_id) for s in (*stages, OVERALL)]
    regressions += [Finding(c.stage, c.regressed) for c in checks if c.regressed]
    overall = checks[-1].test
    improvements += [Finding(OVERALL, f"passes every stage (failed at {before[case].get('first_failure')})", case)
                     for case in overall["fixed_cases"]]
    return GateResult(regressions, improvements, checks)

"""The diff of two reports of the same cases: which cases B fixed, broke or moved to another failing stage, the
pass rates, and the exact McNemar test on the paired cases, overall and per stage."""
from typing import Optional

from whichstage.model.report import ERROR
from whichstage.render.row_view import failure_reason
from whichstage.scoring.gating import stage_order, stage_results
from whichstage._util.stats import ALPHA, mcnemar_exact, rate, rate_text
from whichstage.model.dicts import ReportDict, RowDict

NOISE = "not distinguishable from noise at 5%"


def passed(row: RowDict) -> bool:
    return row["first_failure"] is None


def errored(row: RowDict) -> bool:
    return row["first_failure"] == ERROR


def reason(row: RowDict) -> str:
    """Why a row failed: the run's error text, or evaluate's reason for its first failing stage."""
    if errored(row):
        return row.get("error") or "no error text recorded"
    return failure_reason(row)


def diagnosis_change(a: dict, b: dict) -> str:
    """Which component B's diagnosis of a case names, beside A's: 'diagnosis in B: retriever (... ); in A: none'
    for a case B broke, '... ; in A: generator or prompt' where the cause moved; '' where neither run has one
    or it did not change."""
    cause_a, cause_b = ((r.get("diagnosis") or {}).get("cause") for r in (a, b))
    if cause_b is None or cause_a == cause_b:
        return ""
    outcome = (b["diagnosis"].get("evidence") or {}).get("outcome")
    return f"diagnosis in B: {cause_b}" + (f" ({outcome})" if outcome else "") + f"; in A: {cause_a or 'none'}"


def diff_cases(rows_a: list[RowDict], rows_b: list[RowDict]) -> dict[str, list]:
    """Sort the cases into fixed, broken, changed stage, errored and one-sided, in A's case order."""
    by_id_a, by_id_b = {r["id"]: r for r in rows_a}, {r["id"]: r for r in rows_b}
    both = [cid for cid in by_id_a if cid in by_id_b]
    pairs = [(by_id_a[cid], by_id_b[cid]) for cid in both]
    measured = [(a, b) for a, b in pairs if not errored(a) and not errored(b)]
    return {"fixed": [(a, b) for a, b in measured if not passed(a) and passed(b)],
            "broken": [(a, b) for a, b in measured if passed(a) and not passed(b)],
            "changed": [(a, b) for a, b in measured
                        if not passed(a) and not passed(b) and a["first_failure"] != b["first_failure"]],
            "errored_a": [a for a, _ in pairs if errored(a)],
            "errored_b": [b for _, b in pairs if errored(b)],
            "only_a": [cid for cid in by_id_a if cid not in by_id_b],
            "only_b": [cid for cid in by_id_b if cid not in by_id_a]}


def stage_passes(row: RowDict, stage: str) -> Optional[bool]:
    """Whether one stage passed for a row; None when the row did not measure that stage."""
    return None if errored(row) else stage_results(row).get(stage)


def stage_rate(report: ReportDict, stage: str) -> dict:
    verdicts = [stage_passes(r, stage) for r in report["rows"]]
    measured = [v for v in verdicts if v is not None]
    return rate(sum(measured), len(measured))


def overall_rate(report: ReportDict) -> dict:
    """The share of cases passing every stage; as in evaluate's summary, errored cases are not scored."""
    scored = [r for r in report["rows"] if not errored(r)]
    return rate(sum(passed(r) for r in scored), len(scored))


def run_line(label: str, path: str, report: ReportDict) -> str:
    """One run's pass rate, and how many of its cases errored."""
    errors = sum(errored(r) for r in report["rows"])
    return (f"{label}: {path}  model {report['key'].get('model', 'none')}  pass {rate_text(overall_rate(report))}"
            + (f", {errors} errored (not scored)" if errors else ""))


def ids(rows_or_ids: list) -> str:
    return ", ".join(r if isinstance(r, str) else r["id"] for r in rows_or_ids)


def paired_test(rows_a: list[RowDict], rows_b: list[RowDict], stage: Optional[str] = None) -> dict:
    """The exact McNemar test on the cases both runs scored: overall (passes every stage) or for one stage.

    A case is paired when it is in both runs and errored in neither; for a stage, also only when both runs
    measured that stage. `broken` passed in A and failed in B, `fixed` the reverse; the cases that kept
    their outcome say nothing about which run is better and only count in `paired`."""
    by_id_b = {r["id"]: r for r in rows_b}
    outcomes = []
    for a in rows_a:
        b = by_id_b.get(a["id"])
        if b is None or errored(a) or errored(b):
            continue
        pass_a, pass_b = (passed(a), passed(b)) if stage is None else (stage_passes(a, stage), stage_passes(b, stage))
        if pass_a is not None and pass_b is not None:
            outcomes.append((pass_a, pass_b))
    broken = sum(1 for pass_a, pass_b in outcomes if pass_a and not pass_b)
    fixed = sum(1 for pass_a, pass_b in outcomes if pass_b and not pass_a)
    return {"fixed": fixed, "broken": broken, "paired": len(outcomes), "p": mcnemar_exact(broken, fixed)}


def verdict(test: dict) -> str:
    """'B is better' or 'B is worse' when p < 5%, else that the difference is not distinguishable from noise."""
    if test["p"] < ALPHA:
        return f"B is {'better' if test['fixed'] > test['broken'] else 'worse'} (significant at 5%)"
    return NOISE


def p_text(p: float) -> str:
    """p to two significant digits, or as many more as it takes not to round across the 5% line."""
    for digits in range(2, 18):
        shown = f"{p:.{digits}g}"
        if (float(shown) < ALPHA) == (p < ALPHA):
            return shown
    return repr(p)


def paired_text(test: dict) -> str:
    """'2 fixed, 0 broken of 10 paired cases; exact McNemar p = 0.5: not distinguishable from noise at 5%'."""
    return (f"{test['fixed']} fixed, {test['broken']} broken of {test['paired']} paired "
            f"case{'' if test['paired'] == 1 else 's'}; exact McNemar p = {p_text(test['p'])}: {verdict(test)}")


def comparison(report_a: ReportDict, report_b: ReportDict) -> dict:
    """Everything both renderings show: the case diff, the paired tests and the per-stage pass rates."""
    rows_a, rows_b = report_a["rows"], report_b["rows"]
    return {"diff": diff_cases(rows_a, rows_b), "overall": paired_test(rows_a, rows_b),
            "stages": {stage: {"a": stage_rate(report_a, stage), "b": stage_rate(report_b, stage),
                               "test": paired_test(rows_a, rows_b, stage)} for stage in stage_order(rows_a + rows_b)}}

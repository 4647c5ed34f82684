"""A second judge over the same traces (`--judge2 NAME`): per metric, how often the two judges agree on
pass or fail, Cohen's kappa between them (the second judge's verdict standing where a label would), and the
cases they split on. Pure: two reports in, a dict out; `lines` renders it."""
from typing import Optional

from whichstage.scoring import agreement as agree
from whichstage.scoring.diagnosis import fix_list, second_opinion
from whichstage.scoring.gating import passes, threshold_of
from whichstage.model.dicts import ReportDict, RowDict


def compared(first: ReportDict, second: ReportDict) -> dict:
    """Per judged stage over the cases both reports scored: agreement, kappa, and the split cases with each
    judge's score."""
    by_id = {r["id"]: r for r in second["rows"]}
    found: dict[str, dict] = {}
    for row in first["rows"]:
        other = by_id.get(row["id"])
        if other is None or row.get("error") or other.get("error"):
            continue
        for stage, verdict in row.get("judged", {}).items():
            twin = other.get("judged", {}).get(stage)
            if twin is None:
                continue
            threshold = threshold_of(row, stage)
            a, b = passes(verdict.get("score"), threshold), passes(twin.get("score"), threshold)
            entry = found.setdefault(stage, {"pairs": [], "split": []})
            entry["pairs"].append(("pass" if a else "fail", "good" if b else "defect"))
            if a != b:
                entry["split"].append({"id": row["id"], "first": verdict.get("score"), "second": twin.get("score")})
    result = {}
    for stage, entry in found.items():
        table = agree.counts(entry["pairs"])
        result[stage] = {"cases": len(entry["pairs"]), "agreement": agree.agreement(table),
                         "kappa": agree.kappa(table), "split": entry["split"]}
    return {"first": first["key"]["judge"], "second": second["key"]["judge"], "stages": result}


def beside(report: ReportDict, second: Optional[ReportDict]) -> ReportDict:
    """The report with the second judge's view of the same traces beside its own; no recording of the
    second judge for these models is an error, named."""
    from whichstage._util.files import RecordingError

    if second is None:
        raise RecordingError("--judge2: no recording of that judge for these models; record it with --live --judge2")
    twins, judge = {r["id"]: r for r in second["rows"]}, second["key"]["judge"]
    rows: list[RowDict] = []
    for row in report["rows"]:
        uncertain = second_opinion(row, twins.get(row["id"]), judge)
        rows.append({**row, "diagnosis": uncertain} if uncertain else row)
    found: ReportDict = {**report, "rows": rows}
    if "summary" in report:
        found["summary"] = {**report["summary"], "fix_list": fix_list(rows)}
    found["second_judge"] = compared(report, second)
    return found

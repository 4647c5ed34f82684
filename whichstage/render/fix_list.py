"""What to fix first, as the reports open with it: each component with the cases its intervention proved it the
cause of, most cases first, then the cases no intervention explained; and a case's diagnosis in one line. The
markdown (and so the terminal), the HTML page and `--show` word them here."""
from typing import Optional

from whichstage.scoring.diagnosis import CAUSES
from whichstage.model.dicts import DiagnosisDict, ReportDict, RowDict

SHOWN = 8  # the case ids a line lists before "and N more"


def ids(cases: list[str]) -> str:
    more = f", and {len(cases) - SHOWN} more" if len(cases) > SHOWN else ""
    return ", ".join(cases[:SHOWN]) + more


def fix_line(item: dict) -> str:
    """'the retriever (retriever): 4 cases: json-reports, ...' or 'undetermined: 2 cases: ...'."""
    n = len(item["cases"])
    count = f"{n} case{'' if n == 1 else 's'}"
    if item["cause"] == "undetermined":
        return f"undetermined (no intervention proved a cause): {count}: {ids(item['cases'])}"
    return f"{CAUSES[item['cause']]} ({item['cause']}): {count}: {ids(item['cases'])}"


def diagnosis_line(diagnosis: Optional[DiagnosisDict]) -> str:
    """'cause retriever: retrieval passes and the case then passes (expected pages); first deviation: ...'."""
    if not diagnosis:
        return ""
    evidence, step = diagnosis["evidence"], diagnosis.get("deviation")
    how = f" ({evidence['intervention']})" if evidence.get("intervention") else ""
    return (f"cause {diagnosis['cause']}: {evidence['outcome']}{how}"
            + (f"; first deviation: {step['why']}" if step else ""))


def recheck_line(row: RowDict) -> str:
    """'judged again: faithfulness fails again (0.64; first 0.66, within 0.1 of its threshold 0.7)'; '' for a row
    with no verdict in doubt, 'not recorded: run --live' for one whose recheck is not recorded yet."""
    if "judge_recheck" not in row:
        return ""
    check = row["judge_recheck"]
    if check is None:
        return "judged again: not recorded yet: run --live to record it"
    held = "passes" if check["flipped"] else "fails again"
    again = "-" if check["again"] is None else f"{check['again']:.2f}"
    return f"judged again: {check['stage']} {held} ({again}; first {check['score']:.2f}, {check['why']})"


def markdown_lines(report: ReportDict) -> list[str]:
    """The report's opening section, in markdown; nothing when no case failed."""
    items = (report.get("summary") or {}).get("fix_list") or []
    if not items:
        return []
    return ["## What to fix first\n", *(f"- {fix_line(item)}" for item in items), ""]

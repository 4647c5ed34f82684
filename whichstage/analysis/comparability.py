"""Whether two reports were measured alike: the fields that make their scores incomparable and the cases only
one of them holds; for a comparison across them (--across), what differs and the cases both hold."""
import json
from typing import Optional

from whichstage.model.errors import one_line
from whichstage.model.report import MEASURED_BY
from whichstage.scoring.gating import threshold_differences
from whichstage.model.dicts import ReportDict

SHOWN_IDS = 3  # how many differing case ids a refusal names
ANYWAY = "or pass --across to compare them anyway"


def case_differences(path_a: str, report_a: ReportDict, path_b: str, report_b: ReportDict) -> Optional[str]:
    """Why two reports do not hold the same cases (different splits, or different case ids), or None."""
    ids_a, ids_b = [r["id"] for r in report_a["rows"]], [r["id"] for r in report_b["rows"]]
    in_a, in_b = set(ids_a), set(ids_b)
    only_a, only_b = [i for i in ids_a if i not in in_b], [i for i in ids_b if i not in in_a]

    def some(label: str, found: list[str]) -> list[str]:
        more = f" and {len(found) - SHOWN_IDS} more" if len(found) > SHOWN_IDS else ""
        return [f"{len(found)} only in {label}: {', '.join(map(one_line, found[:SHOWN_IDS]))}{more}"] \
            if found else []

    cases = "; ".join(some("A", only_a) + some("B", only_b))
    split_a, split_b = report_a.get("split"), report_b.get("split")  # compared when both reports name theirs
    if split_a is not None and split_b is not None and split_a != split_b:
        return (f"A ({path_a}) is a report of the {one_line(split_a)} split, B ({path_b}) of the "
                f"{one_line(split_b)} split, so their "
                f"case sets differ{f' ({cases})' if cases else ''}; compare reports of the same split, {ANYWAY}")
    if cases:
        return (f"A ({path_a}) and B ({path_b}) hold different cases ({cases}); compare reports of the same cases, "
                f"{ANYWAY}")
    return None


def measurement_differences(key_a: dict, key_b: dict) -> list[str]:
    """'field (A: x, B: y)' for every key field that makes two runs' scores incomparable."""
    shown = lambda value: "none" if value is None else str(value)  # noqa: E731
    return [f"{field} (A: {shown(key_a.get(field))}, B: {shown(key_b.get(field))})"
            for field in MEASURED_BY if key_a.get(field) != key_b.get(field)] + \
        [f"{field} (A: {a}, B: {b})" for field, a, b in threshold_differences(key_a, key_b)]


def measured_with(report: ReportDict) -> dict:
    """A report's key with its thresholds: everything its scores were measured with."""
    return {**report["key"], "threshold": report["threshold"], "thresholds": report.get("thresholds")}


def refusal(path_a: str, report_a: ReportDict, path_b: str, report_b: ReportDict) -> Optional[str]:
    """Why two runs are not compared without --across (measured differently, or of other cases), naming the
    option; None when they compare as they are."""
    differences = measurement_differences(measured_with(report_a), measured_with(report_b))
    if differences:
        return f"runs differ in {', '.join(differences)}; compare runs measured the same way, {ANYWAY}"
    return case_differences(path_a, report_a, path_b, report_b)


def value_text(value: object) -> str:
    """A key's value on one line: a string as it is (quoted if unprintable), anything else as JSON."""
    if value is None:
        return "none"
    return one_line(value) if isinstance(value, str) else json.dumps(value)


def across_lines(report_a: ReportDict, report_b: ReportDict) -> list[str]:
    """For --across, what differs between the two runs, 'field: A value -> B value' each (every key field,
    the thresholds, the split), and the cases only one holds; nothing when they differ in none."""
    key_a, key_b = report_a["key"], report_b["key"]
    fields = [(field, value_text(key_a.get(field)), value_text(key_b.get(field)))
              for field in dict.fromkeys([*key_a, *key_b]) if key_a.get(field) != key_b.get(field)]
    fields += [(field, str(a), str(b)) for field, a, b in
               threshold_differences(measured_with(report_a), measured_with(report_b))]
    if report_a.get("split") != report_b.get("split"):
        fields.append(("split", value_text(report_a.get("split")), value_text(report_b.get("split"))))
    lines = [f"  {field}: {a} -> {b}" for field, a, b in fields]
    ids_a, ids_b = {r["id"] for r in report_a["rows"]}, {r["id"] for r in report_b["rows"]}
    if ids_a != ids_b:
        lines.append(f"  cases: {len(ids_a - ids_b)} only in A, {len(ids_b - ids_a)} only in B; compared on the "
                     f"{len(ids_a & ids_b)} both hold")
    return ["compared across (--across); A and B differ in:", *lines] if lines else []


def common_cases(report_a: ReportDict, report_b: ReportDict) -> tuple[ReportDict, ReportDict]:
    """Both reports with only the rows of the cases both hold, each in its own order."""
    ids_a, ids_b = {r["id"] for r in report_a["rows"]}, {r["id"] for r in report_b["rows"]}
    return ({**report_a, "rows": [r for r in report_a["rows"] if r["id"] in ids_b]},
            {**report_b, "rows": [r for r in report_b["rows"] if r["id"] in ids_a]})

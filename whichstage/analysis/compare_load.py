"""A report read back by compare: read, recognised as a report, and checked against whichstage.model.report,
each problem one line naming the file, the row and the field."""
from pathlib import Path
from typing import cast

from whichstage.model.dicts import ReportDict
from whichstage._util.files import read_json
from whichstage.model.report import check_report
from whichstage._util.exits import WhichstageError


class CompareError(WhichstageError):
    """A report that cannot be compared: unreadable, not a report, or measured differently."""


def load_report(path: str) -> ReportDict:
    """Read one saved report and check it against the Report model, turning every way it can be unusable into
    a one-line error naming the file as typed."""
    report = read_json(Path(path), CompareError, path)
    if not looks_like_report(report):
        raise CompareError(f"{path}: not an evaluation report (expected 'key', 'threshold' and 'rows' with 'id' "
                           f"and 'first_failure')")
    problem = check_report(report)
    if problem:
        raise CompareError(f"{path}: {problem}")
    return cast(ReportDict, report)  # checked against the Report model


def looks_like_report(data: object) -> bool:
    """An evaluation report, however broken, rather than some other JSON (a calibration report has 'key',
    'threshold' and 'rows' too, but no row of it has a first failure)."""
    if not (isinstance(data, dict) and {"key", "threshold", "rows"} <= data.keys()):
        return False
    rows = data["rows"]
    return not (isinstance(rows, list) and rows and not any(isinstance(r, dict) and "first_failure" in r
                                                            for r in rows))

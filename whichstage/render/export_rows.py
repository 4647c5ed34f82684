"""A run's verdicts out of the harness: one record per case and stage (`stage_records`, read from the row view
every report reads, so an export says what the report says), written as JSONL or CSV; `export` writes any of
the modes `--export` takes (export.py; OpenTelemetry events: export_otel.py). Every file is written whole or not
at all."""
import csv
import io
import json
import math
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Optional, Union

from whichstage._util.files import write_atomic
from whichstage.model.stages import BY_NAME
from whichstage.render.row_view import ERROR, FAIL, PASS, row_view
from whichstage.run.files import run_name
from whichstage.model.dicts import ReportDict, RowDict

COLUMNS = ("run", "case_id", "split", "stage", "verdict", "passed", "score", "threshold", "reason", "first_failure",
           "cause")


class StageRecord(NamedTuple):
    """One case's verdict at one stage (or judged metric): `verdict` is pass, fail, error (the case's calls never
    completed) or n/a (a score that reports, never gates: `passed` is then None); `gates` the stage it decides."""
    run: str
    case_id: str
    split: str
    stage: str
    verdict: str
    passed: Optional[bool]
    score: Optional[float]
    threshold: Optional[float]
    reason: str
    first_failure: Optional[str]
    cause: Optional[str]
    gates: Optional[str]
    row: RowDict  # the report's row, for what an exporter reads besides (the trace's source)


def report_name(report: ReportDict) -> str:
    """The run a report is of, as its files are named: '<case set>+<model>+<embedder>+<judge>'."""
    key = report["key"]
    return run_name(str(key["cases"]).rsplit("@", 1)[0], key["model"], key["embedder"], key["judge"])


def stage_records(report: ReportDict) -> Iterator[StageRecord]:
    """Every case's verdict at every stage that applies to it, in the report's order, then the stages' (gating
    order, then the judged metrics that are no stage); a stage without a verdict or a score is left out. A stage
    decided in code without a number of its own (behaviour) scores 1 for a pass and 0 for a failure."""
    run = report_name(report)
    for row in report["rows"]:
        view = row_view(row)
        diagnosis = row.get("diagnosis")
        cause = diagnosis.get("cause") if diagnosis else None
        for stage, result in view.stages.items():
            if result.verdict not in (PASS, FAIL, ERROR) and result.score is None:
                continue
            score = result.score
            if score is None and result.verdict in (PASS, FAIL) and stage in BY_NAME \
                    and BY_NAME[stage].decides == "code":
                score = 1.0 if result.verdict == PASS else 0.0
            score = float(score) if score is not None and math.isfinite(score) else None
            reason = (row.get("error") or "") if result.verdict == ERROR else result.reason
            yield StageRecord(run, row["id"], row.get("split", "dev"), stage, result.verdict,
                              None if result.verdict not in (PASS, FAIL) else result.verdict == PASS, score,
                              result.threshold, reason, view.first_failure, cause, result.gates, row)


def record_fields(record: StageRecord) -> dict:
    """A record as the JSONL and CSV exports write it: COLUMNS, in order."""
    return {column: getattr(record, column) for column in COLUMNS}


def jsonl_lines(reports: Iterable[ReportDict]) -> Iterator[str]:
    """Every report's stage records, one JSON object a line."""
    for report in reports:
        for record in stage_records(report):
            yield json.dumps(record_fields(record), ensure_ascii=False) + "\n"


def csv_lines(reports: Iterable[ReportDict]) -> Iterator[str]:
    """Every report's stage records as CSV under a header of COLUMNS: `passed` true or false, an absent value
    an empty cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(cells: Iterable) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(cells)
        return buffer.getvalue()

    yield line(COLUMNS)
    for report in reports:
        for record in stage_records(report):
            yield line("" if v is None else str(v).lower() if isinstance(v, bool) else v
                       for v in record_fields(record).values())


def write_rows(reports: list[ReportDict], path: Union[str, Path], mode: str = "jsonl") -> None:
    """Write the reports' stage records to `path` as `mode` (jsonl or csv), atomically."""
    write_atomic(Path(path), jsonl_lines(reports) if mode == "jsonl" else csv_lines(reports))

"""A run's verdicts as OpenTelemetry events: one `gen_ai.evaluation.result` event (the GenAI semantic
conventions' evaluation event) per case and stage, written as OTLP JSON logs (`resourceLogs`, `scopeLogs`,
`logRecords`), one run a line, which a collector's otlpjsonfile receiver ingests.

The conventions' attribute names come from opentelemetry-semantic-conventions, imported when an export is
written (a replay never loads it). An event whose case's trace came in with ids (the row's `source`, kept by
`whichstage import`) is linked to that trace and span: the retrieval stage to its first retriever span where
the trace has one, every other stage to the span of the agent's run. Every event names its case and the
run's key in the harness's own attributes (OWN_ATTRIBUTES, RUN_KEY)."""
import json
import re
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

from whichstage._util.files import write_atomic
from whichstage.render.export_rows import ERROR, FAIL, PASS, StageRecord, report_name, stage_records
from whichstage.model.dicts import ReportDict

# The event's name, as the GenAI conventions define it (gen-ai-events: "Event: gen_ai.evaluation.result");
# opentelemetry-semantic-conventions 0.66b2 names its attributes (GEN_AI_EVALUATION_*) but has no constant
# for an event's name, so it is spelled here, once.
EVENT = "gen_ai.evaluation.result"
SCOPE = "whichstage"
# The harness's own attributes, each in its namespace (docs/exporting.md lists them).
CASE_ID, CASE_SPLIT, FIRST_FAILURE = "whichstage.case.id", "whichstage.case.split", "whichstage.case.first_failure"
CAUSE, THRESHOLD, GATES = "whichstage.diagnosis.cause", "whichstage.evaluation.threshold", "whichstage.evaluation.gates"
RUN = "whichstage.run.name"
SOURCE = "whichstage.source."  # + format, file, trace_id, span_id: where an imported trace came from
SOURCE_FIELDS = ("format", "file", "trace_id", "span_id")
OWN_ATTRIBUTES = (CASE_ID, CASE_SPLIT, FIRST_FAILURE, CAUSE, THRESHOLD, GATES, RUN,
                  *(SOURCE + field for field in SOURCE_FIELDS))
RUN_KEY = "whichstage.run.key."  # + each scalar field of the report's key (model, embedder, judge, cases_sha...)
ERROR_TYPE_OTHER = "_OTHER"  # the conventions' error.type for an error of no known kind
EXCEPTION_NAME = re.compile(r"^(?:\S+: )?([A-Za-z_][\w.]*(?:Error|Exception|Timeout|Exceeded|Exhausted)): ")


def value(v: Any) -> dict:
    """An attribute's value as OTLP JSON writes it (an int64 is a string there)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def attributes(pairs: Iterable[tuple[str, Any]]) -> list[dict]:
    """OTLP JSON key-value pairs, a None value left out."""
    return [{"key": key, "value": value(v)} for key, v in pairs if v is not None]


def hex_id(given: Any, digits: int) -> Optional[str]:
    """A trace id (32 hex digits) or span id (16) as OTLP JSON writes it, from an integer, hex text or a UUID;
    None for anything else, and for the all-zero id, which OTLP reserves for none."""
    if isinstance(given, int) and not isinstance(given, bool) and 0 < given < 1 << (4 * digits):
        return f"{given:0{digits}x}"
    if isinstance(given, str):
        text = given.strip().lower().removeprefix("0x").replace("-", "")
        if re.fullmatch(f"[0-9a-f]{{{digits}}}", text) and text.strip("0"):
            return text
    return None


def error_type(error: Optional[str]) -> str:
    """The low-cardinality error.type of a row's error: the exception's class where its text names one
    ('agent/backup: ReadTimeout: ...' -> ReadTimeout), else _OTHER."""
    found = EXCEPTION_NAME.match(error or "")
    return found.group(1) if found else ERROR_TYPE_OTHER


def link(record: StageRecord) -> tuple[Optional[str], Optional[str]]:
    """The trace and span the record's verdict judges, from its row's source: (trace id, span id), each None
    when the trace came in without a usable one."""
    source = record.row.get("source")
    if not isinstance(source, dict):
        return None, None
    trace = hex_id(source.get("trace_id"), 32)
    if trace is None:
        return None, None
    spans = source.get("retriever_spans") if record.stage == "retrieval" else None
    span = next((s for s in map(lambda given: hex_id(given, 16), spans or []) if s), None)
    return trace, span or hex_id(source.get("span_id"), 16)


def log_record(record: StageRecord, at: str) -> dict:
    """One record's gen_ai.evaluation.result event as an OTLP JSON LogRecord."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE

    given = record.row.get("source")
    source: dict = given if isinstance(given, dict) else {}
    pairs: list[tuple[str, Any]] = [
        (gen_ai.GEN_AI_EVALUATION_NAME, record.stage),
        (gen_ai.GEN_AI_EVALUATION_SCORE_VALUE, None if record.score is None else float(record.score)),
        (gen_ai.GEN_AI_EVALUATION_SCORE_LABEL, record.verdict if record.verdict in (PASS, FAIL) else None),
        (gen_ai.GEN_AI_EVALUATION_EXPLANATION, record.reason or None),
        (ERROR_TYPE, error_type(record.row.get("error")) if record.verdict == ERROR else None),
        (CASE_ID, record.case_id), (CASE_SPLIT, record.split), (FIRST_FAILURE, record.first_failure),
        (CAUSE, record.cause), (THRESHOLD, record.threshold), (GATES, record.gates),
        *((SOURCE + field, source.get(field)) for field in SOURCE_FIELDS
          if isinstance(source.get(field), (str, int)) and not isinstance(source.get(field), bool))]
    found: dict[str, Any] = {"timeUnixNano": at, "observedTimeUnixNano": at, "severityNumber": 9,
                             "severityText": "INFO", "eventName": EVENT, "attributes": attributes(pairs)}
    trace, span = link(record)
    if trace:
        found["traceId"] = trace
        if span:
            found["spanId"] = span
    return found


def resource_logs(report: ReportDict, at: str) -> dict:
    """A report's events as one ExportLogsServiceRequest: its run's resource (the service, the run's name and
    key) and the harness's scope holding an event per case and stage."""
    from opentelemetry.semconv.attributes.service_attributes import SERVICE_NAME

    key = report.get("key") or {}
    scalars = [(RUN_KEY + field, v) for field, v in key.items() if isinstance(v, (str, int, float, bool))]
    resource = attributes([(SERVICE_NAME, SCOPE), (RUN, report_name(report)), *scalars])
    records = [log_record(record, at) for record in stage_records(report)]
    return {"resourceLogs": [{"resource": {"attributes": resource},
                              "scopeLogs": [{"scope": {"name": SCOPE, "version": harness_version()},
                                             "logRecords": records}]}]}


def harness_version() -> str:
    """The installed whichstage's version; 'unknown' when run from a clone that is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("whichstage")
    except PackageNotFoundError:
        return "unknown"


def otlp_lines(reports: Iterable[ReportDict], now_ns: Optional[int] = None) -> Iterator[str]:
    """Each report's events as one line of OTLP JSON (`now_ns`: the events' time, default now)."""
    at = str(time.time_ns() if now_ns is None else now_ns)
    for report in reports:
        yield json.dumps(resource_logs(report, at), ensure_ascii=False, separators=(",", ":")) + "\n"


def write_otel(reports: list[ReportDict], path: Union[str, Path], now_ns: Optional[int] = None) -> None:
    """Write the reports' gen_ai.evaluation.result events to `path` as OTLP JSON logs, atomically."""
    write_atomic(Path(path), otlp_lines(reports, now_ns))

"""Spans in, verdicts out: OpenInference spans of a real instrumented run, imported, judged and exported as
OpenTelemetry evaluation events, each event linked to a span of the file it came from and carrying the very
verdict the report shows."""
import json

from traced import imported_rows, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)


def spans_of(path) -> list[dict]:
    return [s for r in json.loads(path.read_text())["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]


def events_of(path) -> list[dict]:
    return [record for line in path.read_text().splitlines() for resource in json.loads(line)["resourceLogs"]
            for scope in resource["scopeLogs"] for record in scope["logRecords"]]


def attribute(record: dict, key: str):
    found = next((a["value"] for a in record["attributes"] if a["key"] == key), None)
    return None if found is None else next(iter(found.values()))


def test_exported_events_link_to_the_imported_spans_and_carry_the_reports_verdicts(made, notes, tmp_path):
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

    assert whichstage_cli("import", str(made["openinference"])) == 0
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    out = tmp_path / "events.json"
    assert whichstage_cli("run", "--model", "imported", "--split", "all", "--quiet", "--export", "otel", str(out)) == 0
    spans = {(s["traceId"], s["spanId"]) for s in spans_of(made["openinference"])}
    rows = imported_rows(notes)
    events = events_of(out)
    judged = {(attribute(e, "whichstage.case.id"), attribute(e, gen_ai.GEN_AI_EVALUATION_NAME)): e for e in events}
    for cid, row in rows.items():
        for stage, verdict in row["judged"].items():
            event = judged[(cid, stage)]
            assert (event["traceId"], event["spanId"]) in spans, (cid, stage)
            assert attribute(event, gen_ai.GEN_AI_EVALUATION_SCORE_VALUE) == verdict["score"], (cid, stage)
    assert {attribute(e, "whichstage.case.id") for e in events} == set(rows)

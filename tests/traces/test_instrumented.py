"""A LangChain agent instrumented with the real OpenInference and OpenLLMetry instrumentors: its spans, imported,
give the rows of the harness's own run of the same agent on the same cases, judged by the same offline judge."""
import json

import pytest

from traced import IMPORTED, imported_rows, scored, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)


@pytest.mark.parametrize("instrumentor", ["openinference", "openllmetry"])
def test_imported_spans_give_the_rows_of_the_harness_own_run(made, notes, instrumentor):
    assert whichstage_cli("import", str(made[instrumentor])) == 0
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    rows = imported_rows(notes)
    own = {r["id"]: r for r in made["own"]}
    assert set(rows) == set(own) == {"offline-edits", "order-status", "printing", "hello"}
    for cid, row in rows.items():
        assert scored(row) == scored(own[cid]), cid


def test_the_retrieved_pages_come_from_the_retriever_spans(made, notes):
    assert whichstage_cli("import", str(made["openinference"])) == 0
    trace = json.loads((notes / "recordings" / f"{IMPORTED}.json").read_text())["entries"]["agent/offline-edits"]
    output = trace["value"]["tool_outputs"][0]
    assert [p["id"] for p in output["callbacks"]] == ["pages/sync.md", "pages/export.md"]
    assert output["retriever_span_ids"] and output["retriever_span_ids"][0] != output["span_id"]


def test_an_imported_trace_names_its_source_trace_and_spans(made, notes):
    assert whichstage_cli("import", str(made["openinference"])) == 0
    spans = [s for r in json.loads(made["openinference"].read_text())["resourceSpans"]
             for ss in r["scopeSpans"] for s in ss["spans"]]
    value = json.loads((notes / "recordings" / f"{IMPORTED}.json").read_text())["entries"]["agent/order-status"]["value"]
    source = value["source"]
    root = next(s for s in spans if s["spanId"] == source["span_id"])
    assert "parentSpanId" not in root and root["traceId"] == source["trace_id"]
    assert source["format"] == "openinference" and source["file"].endswith("openinference.json")
    tool = next(s for s in spans if s["spanId"] == value["tool_outputs"][0]["span_id"])
    assert tool["name"] == "get_order" and tool["traceId"] == source["trace_id"]


def test_openllmetry_spans_are_read_as_the_genai_conventions(made, notes, capsys):
    assert whichstage_cli("import", str(made["openllmetry"])) == 0
    said = capsys.readouterr().err
    assert "(otlp)" in said and "4 matched to a case" in said
    assert "1 skipped" in said  # create_agent's own trace: the agent built, no run in it


def test_a_replay_of_imported_traces_builds_no_agent(made, notes, monkeypatch):
    assert whichstage_cli("import", str(made["openinference"])) == 0
    from whichstage.agent import factory

    def refuse(*args, **kwargs):
        raise AssertionError("the agent was built for an imported recording")

    monkeypatch.setattr(factory, "builder", refuse)
    monkeypatch.setattr(factory, "build_agent", refuse)
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    assert whichstage_cli("run", "--model", "imported", "--quiet") == 0
    assert (notes / "runs" / f"{IMPORTED}.json").exists()


def test_a_second_import_of_the_same_file_records_nothing_new(made, notes, capsys):
    assert whichstage_cli("import", str(made["openinference"])) == 0
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    before = (notes / "recordings" / f"{IMPORTED}.json").read_text()
    capsys.readouterr()
    assert whichstage_cli("import", str(made["openinference"])) == 0
    assert "already holds them" in capsys.readouterr().err
    assert (notes / "recordings" / f"{IMPORTED}.json").read_text() == before  # its verdicts kept too

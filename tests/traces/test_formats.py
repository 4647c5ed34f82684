"""The formats besides OTLP: a LangSmith run export (as LangChain's tracer hands it to LangSmith) and a JSONL of
chat messages; the format told from the file, or named and checked."""
import json

import pytest

from traced import IMPORTED, imported_rows, one_line, scored, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)

ORDER = {"id": "order-status", "messages": [
    {"role": "user", "content": "What is the status of order ORD-1002?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "ORD-1002"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"order": "ORD-1002", "plan": "Pro", "status": "refunded"}'},
    {"role": "assistant", "content": "Order ORD-1002, a Pro plan, was refunded."}]}
SYNC = {"id": "offline-edits", "messages": [
    {"role": "user", "content": "Do notes I edit offline get synced?"},
    {"role": "assistant", "tool_calls": [{"id": "s", "name": "search_help", "args": {"query": "offline sync"}}]},
    {"role": "tool", "tool_call_id": "s", "content": "Notes edited offline sync when the app is back online.",
     "artifact": [{"id": "pages/sync.md", "page_content": "Notes edited offline sync when the app is back online.",
                   "metadata": {}}]},
    {"role": "assistant", "content": "Yes: notes edited offline sync when the app is back online."}]}


def write_jsonl(path, *lines) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_a_langsmith_run_export_gives_the_rows_of_the_harness_own_run(made, notes, capsys):
    assert whichstage_cli("import", str(made["langsmith"])) == 0
    assert "(langsmith)" in capsys.readouterr().err
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    rows, own = imported_rows(notes), {r["id"]: r for r in made["own"]}
    assert set(rows) == set(own)
    for cid, row in rows.items():
        assert scored(row) == scored(own[cid]), cid


def test_a_langsmith_export_as_jsonl_is_read_as_one_as_json(made, notes, tmp_path):
    runs = json.loads(made["langsmith"].read_text())
    assert whichstage_cli("import", write_jsonl(tmp_path / "runs.jsonl", *runs)) == 0
    entries = json.loads((notes / "recordings" / f"{IMPORTED}.json").read_text())["entries"]
    assert sorted(entries) == ["agent/hello", "agent/offline-edits", "agent/order-status", "agent/printing"]


def test_a_chat_jsonl_gives_its_calls_pages_and_answer(notes, tmp_path, capsys):
    assert whichstage_cli("import", write_jsonl(tmp_path / "chats.jsonl", ORDER, SYNC)) == 0
    assert "(jsonl)" in capsys.readouterr().err
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    rows = imported_rows(notes)
    assert rows["order-status"]["tool_calls"] == [{"name": "get_order", "args": {"order_id": "ORD-1002"}}]
    assert rows["order-status"]["answer"] == "Order ORD-1002, a Pro plan, was refunded."
    assert rows["offline-edits"]["retrieved"] == ["pages/sync.md"]
    assert rows["offline-edits"]["first_failure"] is None and rows["order-status"]["first_failure"] is None


def test_a_named_format_that_does_not_fit_the_file_is_refused(made, notes, capsys):
    assert whichstage_cli("import", str(made["openinference"]), "--format", "jsonl") == 2
    line = one_line(capsys.readouterr().err)
    assert "openinference.json" in line and "read as jsonl" in line


def test_an_unknown_format_is_refused_listing_the_valid_ones(made, notes, capsys):
    assert whichstage_cli("import", str(made["openinference"]), "--format", "zipkin") == 2
    assert one_line(capsys.readouterr().err).endswith(
        "--format 'zipkin': not a trace format (valid: otlp, openinference, langsmith, jsonl)")
    with pytest.raises(Exception, match="valid: otlp, openinference, langsmith, jsonl"):
        import whichstage

        whichstage.import_traces(made["openinference"], project=notes, format="zipkin")


def test_openinference_spans_read_as_plain_otlp_lose_the_openinference_attributes(made, notes, capsys):
    """--format otlp reads the GenAI conventions only: OpenInference's spans then hold no model call."""
    assert whichstage_cli("import", str(made["openinference"]), "--format", "otlp") == 0
    assert "0 matched to a case, 4 skipped" in capsys.readouterr().err

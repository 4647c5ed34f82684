"""A big trace file is read as a stream: one OTLP document is cut into its spans without being held whole, and
its traces are grouped whatever order their spans come in."""
import importlib.util
import json
from pathlib import Path

from traced import IMPORTED, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)
from whichstage.traces import grouping, stream

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "import_memory.py"


def benchmark():
    spec = importlib.util.spec_from_file_location("import_memory", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_big_document_is_read_a_chunk_at_a_time(notes, tmp_path, monkeypatch):
    path = tmp_path / "spans.json"
    benchmark().write(path, 3_000, False, ["What is the status of order ORD-1002?"])
    monkeypatch.setattr(stream, "CHUNK", 16_384)
    held, more = [], stream.Reader.more

    def counted(self):
        held.append(len(self.buf))
        return more(self)

    monkeypatch.setattr(stream.Reader, "more", counted)
    assert whichstage_cli("import", str(path)) == 0
    assert path.stat().st_size > 40 * 16_384 and max(held) < 3 * 16_384  # never more than a few chunks held
    drafts = json.loads((notes / "imported-drafts.json").read_text())["cases"]
    assert len(drafts) == 299 and drafts[0]["expected_docs"] == ["pages/sync.md", "pages/export.md"]
    assert json.loads((notes / "recordings" / f"{IMPORTED}.json").read_text())["entries"].keys() == {
        "agent/order-status"}


def test_a_traces_spans_are_grouped_in_any_order():
    spans = [{"trace": t, "id": f"{t}{i}", "where": f"spans[{n}]"}
             for n, (t, i) in enumerate([("a", 1), ("b", 1), ("a", 2), ("c", 1), ("b", 2), ("a", 3)])]
    found = list(grouping.by_trace(spans, "f.json"))
    assert [[s["id"] for s in group] for group in found] == [["a1", "a2", "a3"], ["b1", "b2"], ["c1"]]


def test_a_trace_of_absurdly_many_spans_is_refused(monkeypatch):
    monkeypatch.setattr(grouping, "MAX_TRACE_SPANS", 3)
    spans = [{"trace": "t", "id": str(i), "where": f"spans[{i}]"} for i in range(5)]
    try:
        list(grouping.by_trace(spans, "f.json"))
    except stream.TraceFileError as e:
        assert str(e) == "f.json: spans[0]: trace t holds over 3 spans: an absurd size for one agent run"
    else:
        raise AssertionError("not refused")


def test_a_value_cut_by_a_chunk_is_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "CHUNK", 7)
    path = tmp_path / "values.jsonl"
    path.write_text('{"messages": [], "n": 1234567890123}\n[{"a": "x\\u00e9y"}, {"b": 2}]\n')
    found = list(stream.values(path, "values.jsonl"))
    assert found == [("item", "line 1", {"messages": [], "n": 1234567890123}),
                     ("item", "line 2 item 0", {"a": "xéy"}), ("item", "line 2 item 1", {"b": 2})]

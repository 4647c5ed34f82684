"""Malformed, truncated and hostile trace files: one line naming the file and the span, exit 2, no traceback,
and nothing written (a recording imported before is left as it was)."""
import json

import pytest

from traced import IMPORTED, one_line, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)
from whichstage.traces import stream


def spans_of(request: dict) -> list[dict]:
    return [s for r in request["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]


def attribute(span: dict, key: str) -> dict:
    return next(a for a in span["attributes"] if a["key"] == key)


@pytest.fixture
def imported_before(made, notes) -> bytes:
    """The project with the OpenInference traces imported: what a failed import must leave as it is."""
    assert whichstage_cli("import", str(made["openinference"])) == 0
    return (notes / "recordings" / f"{IMPORTED}.json").read_bytes()


def refused(notes, capsys, path, before: bytes, *more: str) -> str:
    """Import `path`: exit 2, one line (returned) naming the file, the recording and its folder as they were."""
    capsys.readouterr()
    assert whichstage_cli("import", str(path), *more) == 2
    captured = capsys.readouterr()
    line = one_line(captured.err)
    assert captured.out == "" and path.name in line and line.isprintable()
    assert (notes / "recordings" / f"{IMPORTED}.json").read_bytes() == before
    assert sorted(p.name for p in (notes / "recordings").iterdir()) == [f".{IMPORTED}.lock", f"{IMPORTED}.json"]
    assert not (notes / "imported-drafts.json").exists()
    return line


def edited(made, tmp_path, edit) -> "Path":  # noqa: F821
    request = json.loads(made["openinference"].read_text())
    edit(spans_of(request))
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(request))
    return path


def test_malformed_json_is_one_line_naming_the_line(notes, imported_before, tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab",, }]}]}]}')
    assert "malformed JSON at line 1" in refused(notes, capsys, path, imported_before)


def test_a_truncated_file_says_so(made, notes, imported_before, tmp_path, capsys):
    text = made["openinference"].read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[:len(text) // 2])
    assert "truncated" in refused(notes, capsys, path, imported_before)


def test_a_span_without_its_id_is_named(made, notes, imported_before, tmp_path, capsys):
    path = edited(made, tmp_path, lambda spans: spans[3].pop("spanId"))
    line = refused(notes, capsys, path, imported_before)
    assert "resourceSpans[0].scopeSpans[0].spans[3]: no span id" in line


def test_an_id_holding_control_characters_is_refused_shown_printable(made, notes, imported_before, tmp_path, capsys):
    path = edited(made, tmp_path, lambda spans: spans[2].update(traceId="ab\x1b[31m\ncd"))
    line = refused(notes, capsys, path, imported_before)
    assert "spans[2]" in line and "trace id" in line and "\x1b" not in line


def test_a_document_id_that_tries_to_leave_the_project_is_refused(made, notes, imported_before, tmp_path, capsys):
    def traverse(spans):
        for span in spans:
            for a in span["attributes"]:
                if a["key"] == "retrieval.documents.0.document.metadata":
                    a["value"]["stringValue"] = json.dumps({"id": "../../../etc/passwd"})
    path = edited(made, tmp_path, traverse)
    line = refused(notes, capsys, path, imported_before)
    retriever = next(s for s in spans_of(json.loads(path.read_text())) if s["name"] == "VectorStoreRetriever")
    assert "'../../../etc/passwd', which is not in the project's pages" in line and retriever["spanId"] in line


def test_an_absurd_token_count_is_refused(made, notes, imported_before, tmp_path, capsys):
    def absurd(spans):
        llm = next(s for s in spans if s["name"] == "RulesChatModel")
        attribute(llm, "llm.token_count.prompt")["value"] = {"intValue": "9" * 40}
    line = refused(notes, capsys, edited(made, tmp_path, absurd), imported_before)
    assert "llm.token_count.prompt" in line and "is not a token count" in line


def test_a_span_of_absurd_size_is_refused_before_it_is_held(made, notes, imported_before, tmp_path, capsys,
                                                              monkeypatch):
    monkeypatch.setattr(stream, "MAX_VALUE", 50_000)
    monkeypatch.setattr(stream, "CHUNK", 4096)
    path = edited(made, tmp_path, lambda spans: attribute(spans[0], "input.value")["value"].update(
        stringValue="x" * 200_000))
    assert "span resourceSpans[0].scopeSpans[0].spans[0]: over 0 MiB of text: an absurd size" in \
        refused(notes, capsys, path, imported_before)


def test_a_file_nested_too_deeply_is_refused(notes, imported_before, tmp_path, capsys):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert "nested too deeply" in refused(notes, capsys, path, imported_before)


def test_a_file_that_is_not_utf8_is_refused(notes, imported_before, tmp_path, capsys):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"messages": [{"role": "user", "content": "caf\xe9"}]}\n')
    assert "not UTF-8" in refused(notes, capsys, path, imported_before)


def test_a_file_of_something_else_is_refused(notes, imported_before, tmp_path, capsys):
    path = tmp_path / "other.json"
    path.write_text('{"rows": []}')
    assert "neither OTLP spans, a LangSmith run nor a conversation" in refused(notes, capsys, path, imported_before)


def test_a_bad_trace_late_in_the_file_writes_nothing_of_the_good_ones(made, notes, tmp_path, capsys):
    good = json.loads(made["openinference"].read_text())
    bad = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "name": "x"}]}]}]}
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    assert whichstage_cli("import", str(path)) == 2
    assert "line 2 resourceSpans[0].scopeSpans[0].spans[0]: no span id" in one_line(capsys.readouterr().err)
    assert not (notes / "recordings").exists()

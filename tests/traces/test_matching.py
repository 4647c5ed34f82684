"""Which case an imported trace is scored against: the case its metadata names, or the case of its question once
whitespace is normalised; a trace of no case becomes a draft case linked to its trace, refused until a person
writes its reference."""
import json

from traced import IMPORTED, agent_runs, one_line, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)
from otlp_files import finished, instrumented, write_otlp
from test_formats import ORDER, write_jsonl
from whichstage.project.validate import REFERENCE_PLACEHOLDER


def entries(folder) -> dict:
    return json.loads((folder / "recordings" / f"{IMPORTED}.json").read_text())["entries"]


def test_a_trace_whose_metadata_names_a_case_is_that_case(notes, tmp_path):
    exporter, uninstrument = instrumented("openinference")
    try:  # another wording of the question: matched by the case id LangChain's config metadata carries
        agent_runs(notes, ["Is ORD-1002 refunded?"], [{"metadata": {"case_id": "order-status"}}])
    finally:
        uninstrument()
    assert whichstage_cli("import", str(write_otlp(tmp_path / "spans.json", finished(exporter, 1)))) == 0
    assert list(entries(notes)) == ["agent/order-status"]
    assert not (notes / "imported-drafts.json").exists()


def test_a_question_matches_once_its_whitespace_is_normalised(notes, tmp_path):
    asked = {**ORDER, "id": "prod-7", "messages": [{"role": "user", "content": "  What is the status\nof order "
                                                                                "ORD-1002? "}, *ORDER["messages"][1:]]}
    assert whichstage_cli("import", write_jsonl(tmp_path / "chats.jsonl", asked)) == 0
    assert list(entries(notes)) == ["agent/order-status"]


def test_a_question_differing_in_more_than_whitespace_is_no_match(notes, tmp_path):
    asked = {"id": "prod-8", "messages": [{"role": "user", "content": "what is the status of order ORD-1002"},
                                          *ORDER["messages"][1:]]}
    assert whichstage_cli("import", write_jsonl(tmp_path / "chats.jsonl", asked)) == 0
    assert not (notes / "recordings" / f"{IMPORTED}.json").exists()
    assert (notes / "imported-drafts.json").exists()


def test_an_unmatched_trace_is_drafted_linked_to_its_trace_and_span(made, notes, tmp_path, capsys):
    exporter, uninstrument = instrumented("openinference")
    try:
        agent_runs(notes, ["Can I export my notes?"])
    finally:
        uninstrument()
    spans = finished(exporter, 1)
    root = next(s for s in spans if s.parent is None)
    assert whichstage_cli("import", str(write_otlp(tmp_path / "spans.json", spans))) == 0
    assert "1 drafted as cases in imported-drafts.json" in capsys.readouterr().err
    [draft] = json.loads((notes / "imported-drafts.json").read_text())["cases"]
    assert draft["question"] == "Can I export my notes?" and draft["reference"] == REFERENCE_PLACEHOLDER
    assert draft["expected_tools"] == ["search_help"] and draft["expected_docs"][0] == "pages/export.md"
    assert draft["source"] == {"format": "openinference", "file": str(tmp_path / "spans.json"),
                               "trace_id": format(root.context.trace_id, "032x"),
                               "span_id": format(root.context.span_id, "016x")}
    assert draft["id"] == "imported-" + format(root.context.trace_id, "032x")


def test_a_draft_is_refused_until_its_reference_is_written_then_its_trace_is_scored(notes, tmp_path, capsys):
    asked = {**ORDER, "id": "refund-check", "messages": [{"role": "user", "content": "Was ORD-1002 refunded?"},
                                                         *ORDER["messages"][1:]]}
    chats = write_jsonl(tmp_path / "chats.jsonl", asked)
    assert whichstage_cli("import", chats) == 0
    [draft] = json.loads((notes / "imported-drafts.json").read_text())["cases"]
    assert draft["id"] == "refund-check"  # the id the line names, free in the case set
    cases = json.loads((notes / "cases.json").read_text())
    cases["cases"].append(draft)
    (notes / "cases.json").write_text(json.dumps(cases))
    capsys.readouterr()
    assert whichstage_cli("import", chats) == 2
    line = one_line(capsys.readouterr().err)
    assert "cases[4] (refund-check).reference: still the placeholder" in line
    cases["cases"][-1]["reference"] = "Yes: order ORD-1002 was refunded."
    (notes / "cases.json").write_text(json.dumps(cases))
    assert whichstage_cli("import", chats) == 0
    assert list(entries(notes)) == ["agent/refund-check"]
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet", "--split", "all") == 0


def test_two_traces_of_one_case_keep_the_first(notes, tmp_path, capsys):
    later = {**ORDER, "id": "order-status-2", "messages": [*ORDER["messages"][:-1],
                                                           {"role": "assistant", "content": "Refunded."}]}
    assert whichstage_cli("import", write_jsonl(tmp_path / "chats.jsonl", ORDER, later)) == 0
    assert "1 more matched a case already matched" in capsys.readouterr().err
    assert entries(notes)["agent/order-status"]["value"]["answer"] == "Order ORD-1002, a Pro plan, was refunded."

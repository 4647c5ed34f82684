"""Imported traces have no agent behind them: the interventions that run it again say they could not, the live
run never builds it, and a trace the case no longer fits is refused rather than recorded again."""
import json

from traced import IMPORTED, imported_rows, one_line, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)
from test_formats import ORDER, SYNC, write_jsonl

WRONG_PAGE = {**SYNC, "messages": [*SYNC["messages"][:2], {
    **SYNC["messages"][2], "content": "Choose File, then Export.",
    "artifact": [{"id": "pages/export.md", "page_content": "Choose File, then Export.", "metadata": {}}]},
    SYNC["messages"][3]]}
WRONG_TOOL = {**ORDER, "messages": [ORDER["messages"][0], {"role": "assistant", "tool_calls": [
    {"id": "x", "name": "search_help", "args": {"query": "order ORD-1002"}}]},
    {"role": "tool", "tool_call_id": "x", "content": "Choose File, then Export.",
     "artifact": [{"id": "pages/export.md", "page_content": "Choose File, then Export.", "metadata": {}}]},
    {"role": "assistant", "content": "I could not find it."}]}


def imported_failures(notes, tmp_path) -> dict:
    assert whichstage_cli("import", write_jsonl(tmp_path / "chats.jsonl", WRONG_PAGE, WRONG_TOOL)) == 0
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    return imported_rows(notes)


def test_a_retrieval_failure_is_undetermined_without_the_agent_to_rerun(notes, tmp_path):
    row = imported_failures(notes, tmp_path)["offline-edits"]
    assert row["first_failure"] == "retrieval"
    assert row["counterfactual"] == {"for": "retrieval", "available": False,
                                     "why": "imported trace: no agent to re-run with the expected pages"}
    assert row["diagnosis"]["cause"] == "undetermined"
    assert row["diagnosis"]["evidence"]["outcome"] == "imported trace: no agent to re-run with the expected pages"


def test_a_tools_failure_is_undetermined_without_the_agent_to_rerun(notes, tmp_path):
    row = imported_failures(notes, tmp_path)["order-status"]
    assert row["first_failure"] == "tools"
    assert row["diagnosis"]["evidence"]["outcome"] == "imported trace: no agent to re-run with the expected calls"


def test_the_report_says_which_diagnoses_needed_the_agent(notes, tmp_path):
    imported_failures(notes, tmp_path)
    report = (notes / "runs" / f"{IMPORTED}.md").read_text()
    assert "imported trace: no agent to re-run with the expected pages" in report
    assert "imported trace: no agent to re-run with the expected calls" in report


def test_no_intervention_entry_is_recorded_for_imported_traces(notes, tmp_path):
    imported_failures(notes, tmp_path)
    entries = json.loads((notes / "recordings" / f"{IMPORTED}.json").read_text())["entries"]
    assert not [e for e in entries if "@expected" in e or e.startswith("ladder/")]
    assert [e for e in entries if e.startswith("agent/")] == ["agent/offline-edits", "agent/order-status"]


def test_a_case_whose_question_changed_refuses_the_live_run_before_any_call(notes, tmp_path, capsys):
    assert whichstage_cli("import", write_jsonl(tmp_path / "chats.jsonl", ORDER)) == 0
    cases = json.loads((notes / "cases.json").read_text())
    cases["cases"][1]["question"] = "Where is my order ORD-1002?"
    (notes / "cases.json").write_text(json.dumps(cases))
    capsys.readouterr()
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 2
    line = one_line(capsys.readouterr().err)
    assert "the imported trace of case order-status is stale (question changed)" in line
    assert "import the traces again" in line
    assert not (notes / "recordings" / f".{IMPORTED}.partial.jsonl").exists()


def test_repeats_and_rerecord_are_refused_for_imported_traces(notes, tmp_path, capsys):
    assert whichstage_cli("import", write_jsonl(tmp_path / "chats.jsonl", ORDER)) == 0
    for option in (["--repeats", "2"], ["--rerecord"]):
        capsys.readouterr()
        assert whichstage_cli("run", "--model", "imported", "--live", "--quiet", *option) == 2
        assert "its agent is never run again" in one_line(capsys.readouterr().err)

"""`whichstage cases export|import`: a case set as DeepEval goldens or Ragas samples, JSONL or CSV, and back: a
round trip gives the very cases; an edited peer column wins over the metadata; a peer's own rows (no metadata)
become cases or drafts; a bad row is one line naming the file, its line or row and the field, nothing written."""
import json
from pathlib import Path

import pytest

from whichstage.cli import main as whichstage
from whichstage.project import config as projects
from whichstage.project.peer_cases import FORMATS
from whichstage.run import case_sets

from conftest import PROJECT, one_line

SUFFIX = {"deepeval-jsonl": "jsonl", "deepeval-csv": "csv", "ragas-jsonl": "jsonl", "ragas-csv": "csv"}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("folder", [PROJECT, PROJECT / "examples" / "inverter"])
def test_a_case_set_exported_and_read_back_is_the_same_cases(tmp_path, folder, fmt):
    project = projects.load(folder)
    path = tmp_path / f"cases.{SUFFIX[fmt]}"
    assert case_sets.export_cases(project, path, fmt) == len(case_sets.case_set(project)["cases"])
    texts = case_sets.page_texts(project)
    unmatched: list[str] = []
    read_fmt, rows = case_sets.read_cases(path, path.name, None, texts, unmatched)
    assert read_fmt == fmt and unmatched == []
    assert [case for _, case in rows] == case_sets.case_set(project)["cases"]


def run(*args: str) -> int:
    return whichstage(["cases", *args])


@pytest.mark.parametrize("fmt", FORMATS)
def test_importing_an_export_over_a_cut_case_set_restores_its_file_byte_for_byte(here, capsys, fmt):
    original = (here / "cases.json").read_bytes()
    assert run("export", f"out.{SUFFIX[fmt]}", "--format", fmt) == 0
    data = json.loads(original)
    (here / "cases.json").write_text(json.dumps({**data, "cases": data["cases"][:3]}, indent=2) + "\n")
    capsys.readouterr()
    assert run("import", f"out.{SUFFIX[fmt]}") == 0
    assert capsys.readouterr().out == f"cases.json: {len(data['cases']) - 3} added, 0 updated, 3 unchanged\n"
    assert (here / "cases.json").read_bytes() == original and not (here / "cases.drafts.json").exists()


def test_an_edited_peer_column_wins_over_the_metadata(here, capsys):
    assert run("export", "out.jsonl") == 0
    rows = [json.loads(line) for line in (here / "out.jsonl").read_text().splitlines()]
    rows[0]["expected_output"] = "Back up tasks.db."
    rows[0]["expected_tools"].append({"name": "get_issue", "inputParameters": {"number": 212}})
    (here / "out.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = json.loads((here / "cases.json").read_text())["cases"]
    capsys.readouterr()
    assert run("import", "out.jsonl") == 0
    assert capsys.readouterr().out.startswith("cases.json: 0 added, 1 updated, ")
    after = json.loads((here / "cases.json").read_text())["cases"]
    assert after[0] == {**before[0], "reference": "Back up tasks.db.", "expected_tools": ["search_docs", "get_issue"],
                        "expected_args": {"get_issue": {"number": 212}}}
    assert after[1:] == before[1:]


def test_a_peers_own_rows_become_cases_and_drafts(here, capsys):
    storage = next(p["text"] for p in json.loads((here / "docs.json").read_text()) if p["id"] == "storage")
    rows = [{"input": "How do I back up my tasks?", "expected_output": "Copy tasks.db.", "name": "Back up!",
             "context": [storage, "a passage of no page"], "expected_tools": [{"name": "search_docs"}]},
            {"input": "What is new?", "expected_output": None}]
    (here / "goldens.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run("import", "goldens.jsonl") == 0
    out = capsys.readouterr().out
    assert "1 added" in out and "1 draft (no reference) in cases.drafts.json" in out and "1 context passage" in out
    added = json.loads((here / "cases.json").read_text())["cases"][-1]
    assert added == {"id": "Back-up", "question": "How do I back up my tasks?", "expected_docs": ["storage"],
                     "expected_tools": ["search_docs"], "reference": "Copy tasks.db."}
    draft = json.loads((here / "cases.drafts.json").read_text())["cases"]
    assert [(d["id"], d["reference"]) for d in draft] == [("imported-2", case_sets.REFERENCE_PLACEHOLDER)]


BAD = {
    "unknown-tool.jsonl": ('{"input": "x?", "expected_output": "y", "expected_tools": [{"name": "nope"}]}\n',
                           "unknown-tool.jsonl: line 1 (imported-1).expected_tools: the agent has no tool 'nope'"),
    "torn.jsonl": ('{"input": "x?", "expected_output": "y"}\n{"input": \n',
                   "torn.jsonl: line 2: malformed JSON at column 11"),
    "calls.csv": ("user_input,reference,reference_tool_calls\nx?,y,[{\n",
                  "calls.csv: row 2: reference_tool_calls: neither JSON nor a list"),
    "bad-split.csv": ('input,expected_output,additional_metadata\nx?,y,"{""whichstage"": {""split"": ""test""}}"\n',
                      "bad-split.csv: row 2 (imported-1).split: Input should be 'dev' or 'holdout'"),
    "no-question.jsonl": ('{"input": "", "expected_output": "y"}\n', "no-question.jsonl: line 1: input: empty"),
}


@pytest.mark.parametrize("name", BAD)
def test_a_bad_row_is_one_line_naming_the_file_the_row_and_the_field_and_nothing_is_written(here, capsys, name):
    text, expected = BAD[name]
    (here / name).write_text(text)
    before = (here / "cases.json").read_bytes()
    assert run("import", name) == 2
    out, err = capsys.readouterr()
    assert one_line(err).startswith(f"whichstage cases: {expected}") and out == ""
    assert (here / "cases.json").read_bytes() == before and not (here / "cases.drafts.json").exists()
    assert not list(Path(here).glob(".cases.json.*"))


def test_a_draft_never_replaces_a_case(here, capsys):
    (here / "blank.jsonl").write_text(json.dumps({"input": "Where?", "expected_output": "", "name": "backup"}) + "\n")
    assert run("import", "blank.jsonl") == 2
    assert "blank.jsonl: line 1 (backup): expected_output: empty, and cases.json holds a case of this id" in \
        one_line(capsys.readouterr().err)


def test_the_api_exports_and_imports_as_the_command_does(here):
    import whichstage

    assert whichstage.export_cases(here, here / "out.csv", format="ragas-csv", split="holdout") == 9
    done = whichstage.import_cases(here, here / "out.csv")
    assert (len(done["unchanged"]), done["added"], done["written"]) == (9, [], [])

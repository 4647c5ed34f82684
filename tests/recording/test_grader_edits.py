"""A grader-only edit (a case's expected tools) costs no agent run: a replay scores it again, a live run records
the one tool score it changed."""
import json

from whichstage.cli import run as evaluate
from conftest import OFFLINE_RUN


def edit_cases(folder, change) -> None:
    path = folder / "cases.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def expect_a_search_too(data: dict) -> None:
    case = next(c for c in data["cases"] if c["id"] == "issue-212")
    case["expected_tools"] = ["get_issue", "search_docs"]


def test_an_edit_to_expected_tools_alone_is_rescored_at_replay(here, capsys):
    edit_cases(here, expect_a_search_too)
    assert evaluate.main(["--model", "rules"]) == 0, capsys.readouterr().err
    report = json.loads((here / "runs" / f"{OFFLINE_RUN}.json").read_text())
    tools = next(r for r in report["rows"] if r["id"] == "issue-212")["tools"]
    assert tools["missing"] == ["search_docs"] and tools["deepeval"]["score"] == 0.5  # scored on the new list


def test_a_live_run_after_an_expected_tools_edit_records_one_entry(live_project, capsys):
    edit_cases(live_project, expect_a_search_too)
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert "recorded 1 new entry, kept " in capsys.readouterr().err

"""A grader-only edit (a case's expected tools) costs no agent run of the case's own: a replay scores it again, a
live run records the one tool score it changed, and for the case it now fails at tools the tools intervention
(its run with the expected calls made, scored as any run)."""
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


def test_a_live_run_after_an_expected_tools_edit_records_one_tool_score_and_the_intervention(live_project, capsys):
    path = live_project / "recordings" / f"{OFFLINE_RUN}.json"
    before = json.loads(path.read_text())["entries"]
    edit_cases(live_project, expect_a_search_too)
    assert evaluate.main(["--live", "--quiet"]) == 0
    after = json.loads(path.read_text())["entries"]
    changed = sorted(n for n in after if after[n]["deps"] != before.get(n, {}).get("deps"))
    assert [n for n in changed if "@expected-calls" not in n] == ["tools/issue-212"]
    assert "agent/issue-212@expected-calls" in changed

"""`python assistant.py "question" --as-case ID`: one run of a project's agent, printed as a draft case for its
case set, whose reference is left for a person to write. All offline, on copies of the example projects."""
import json
import shutil
from pathlib import Path

import pytest

import assistant
from whichstage.cli import run as evaluate
from conftest import OFFLINE_RUN, load_project, one_line
from whichstage.cli import ask
from whichstage.project.validate import ID_RULE
from whichstage.agent.reading import Unreadable

HERE = Path(__file__).parents[2]
RESTORE = "How do I bring back a task I archived?"
TICKET = "What is the status of ticket INV-1001?"


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("DOCS_MODEL", "rules")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")


@pytest.fixture
def inverter(tmp_path, offline) -> Path:
    folder = tmp_path / "inverter"
    shutil.copytree(HERE / "examples" / "inverter", folder, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    return folder


def drafted(capsys, *argv: str) -> dict:
    assert assistant.main(list(argv)) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return json.loads(out.out)


def append(folder: Path, case: dict) -> None:
    path = folder / "cases.json"
    cases = json.loads(path.read_text(encoding="utf-8"))
    cases["cases"].append(case)
    path.write_text(json.dumps(cases, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def test_a_drafted_case_holds_what_the_agent_did_and_no_reference(project, offline, capsys):
    case = drafted(capsys, "--project", str(project), RESTORE, "--as-case", "restore-draft")
    assert case["id"] == "restore-draft" and case["question"] == RESTORE
    assert case["expected_tools"] == ["search_docs"]
    assert case["expected_docs"][0] == "archive" and len(case["expected_docs"]) <= load_project(project).project.k
    assert case["expected_behavior"] == "answer" and "expected_args" not in case
    assert case["reference"] == ask.REFERENCE_PLACEHOLDER


def test_a_lookup_is_drafted_with_the_key_it_was_called_with(inverter, capsys):
    case = drafted(capsys, "--project", str(inverter), TICKET, "--as-case", "ticket-draft")
    assert case["expected_tools"] == ["get_ticket"] and case["expected_docs"] == []
    assert case["expected_args"] == {"get_ticket": {"ticket_id": "INV-1001"}}
    case["reference"] = "INV-1001 is resolved: a water-damaged DC connector was replaced."
    append(inverter, case)
    assert any(c["id"] == "ticket-draft" for c in load_project(inverter).cases["cases"])


def test_a_message_that_needs_no_tool_is_drafted_as_chitchat(project, offline, capsys):
    case = drafted(capsys, "--project", str(project), "hi there", "--as-case", "greeting-draft")
    assert case["expected_tools"] == [] and case["expected_behavior"] == "chitchat"


def test_a_drafted_case_loads_and_records_once_its_reference_is_written(live_project, capsys):
    case = drafted(capsys, "--project", str(live_project), RESTORE, "--as-case", "restore-draft")
    case["reference"] = "Run tracker restore ID to bring an archived task back to the active list."
    append(live_project, case)
    assert any(c["id"] == "restore-draft" for c in load_project(live_project).cases["cases"])
    assert evaluate.main(["--project", str(live_project), "--live", "--quiet"]) == 0
    report = json.loads((live_project / "runs" / f"{OFFLINE_RUN}.json").read_text())
    row = next(r for r in report["rows"] if r["id"] == "restore-draft")
    assert row["retrieved"][0] == "archive"


@pytest.mark.parametrize("bad", ["two words", "bad|id", "<b>", ""])
def test_a_bad_id_is_refused_in_one_line_before_the_agent_runs(project, offline, capsys, fake_models, bad):
    assert assistant.main(["--project", str(project), RESTORE, "--as-case", bad]) == 2
    out = capsys.readouterr()
    assert one_line(out.err) == f"assistant.py: --as-case {bad}: {ID_RULE}" and out.out == ""
    assert fake_models.calls == []  # the agent never ran


def test_an_id_the_case_set_already_holds_is_refused_in_one_line(project, offline, capsys):
    assert assistant.main(["--project", str(project), RESTORE, "--as-case", "restore"]) == 2
    assert one_line(capsys.readouterr().err) == \
        "assistant.py: --as-case restore: cases.json already has a case with this id"


def test_pages_the_harness_cannot_read_leave_the_case_without_expected_docs(project, offline, capsys, monkeypatch):
    from whichstage.run.entries import Inputs

    def unreadable(self, trace):
        raise Unreadable("search_docs returned 'three pages', which the harness cannot read as pages")
    monkeypatch.setattr(Inputs, "view", unreadable)
    assert assistant.main(["--project", str(project), RESTORE, "--as-case", "restore-draft"]) == 0
    out = capsys.readouterr()
    case = json.loads(out.out)
    assert "expected_docs" not in case and case["expected_tools"] == ["search_docs"]
    assert one_line(out.err) == ("assistant.py: the case has no expected_docs: search_docs returned 'three pages', "
                                 "which the harness cannot read as pages")


def test_a_drafted_case_is_refused_on_load_until_its_reference_is_written(tmp_path):
    from conftest import copy_project, load_project
    from whichstage.model.errors import InputError

    project = copy_project(tmp_path)
    cases = json.loads((project / "cases.json").read_text())
    cases["cases"].append({"id": "drafted", "question": "How do I bring back a task I archived?",
                           "expected_tools": ["search_docs"], "expected_docs": ["archive"],
                           "reference": ask.REFERENCE_PLACEHOLDER})
    (project / "cases.json").write_text(json.dumps(cases))
    with pytest.raises(InputError, match=r"cases\[\d+\] \(drafted\)\.reference: still the placeholder"):
        load_project(project)
    cases["cases"][-1]["reference"] = "Run tracker restore ID."
    (project / "cases.json").write_text(json.dumps(cases))
    assert load_project(project).cases["cases"][-1]["id"] == "drafted"

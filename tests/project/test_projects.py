"""Any agent in its own project folder: the second example project (examples/inverter: markdown pages, a
retriever whose pages come as Document artifacts or through the retriever callbacks, a lookup with string
keys, an ordinary tool), `init`, and a bad evals.toml. Every run goes through `--project`, as a user's would."""
import json
import shutil
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from whichstage.analysis import calibration as calibrate
from whichstage.analysis import compare
from whichstage.cli import run as evaluate
from conftest import OFFLINE, untimed

HERE = Path(__file__).parents[2]
EXAMPLE = HERE / "examples" / "inverter"
RUN = "inverter-support+rules+hash+lexical"


@pytest.fixture
def example(tmp_path, monkeypatch) -> Path:
    """A copy of examples/inverter, run from the repository like a user's project; offline backends chosen."""
    folder = tmp_path / "inverter"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    monkeypatch.chdir(tmp_path)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    from whichstage.calls import retries as live_calls

    monkeypatch.setattr(live_calls, "sleep", lambda seconds: None)
    return folder


def run(folder: Path, *args: str) -> int:
    return evaluate.main(["--project", str(folder), *args])


def report(folder: Path, split: str = "all") -> dict:
    return json.loads((folder / "runs" / f"{RUN}{'' if split == 'dev' else '.' + split}.json").read_text())


def row(found: dict, cid: str) -> dict:
    return next(r for r in found["rows"] if r["id"] == cid)


def set_agent(folder: Path, factory: str) -> None:
    config = folder / "evals.toml"
    config.write_text(config.read_text().replace('agent = "agent:build"', f'agent = "agent:{factory}"'))


# ---- a project of its own: live, replay, rows -----------------------------------------------------------

def test_a_live_run_from_nothing_records_what_the_example_holds(example):
    shutil.rmtree(example / "recordings")
    for path in (example / "runs").iterdir():  # the calibration report stays: it decides which verdicts are rechecked
        if not path.name.startswith("calibration+"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert run(example, "--live", "--quiet", "--split", "all") == 0
    recorded = json.loads((example / "recordings" / f"{RUN}.json").read_text())
    assert untimed(recorded) == untimed(json.loads((EXAMPLE / "recordings" / f"{RUN}.json").read_text()))


def test_a_replay_reproduces_the_examples_reports_without_a_model(example, monkeypatch):
    for name in OFFLINE:
        monkeypatch.delenv(name)
    assert run(example, "--split", "all") == 0
    assert report(example) == json.loads((EXAMPLE / "runs" / f"{RUN}.all.json").read_text())


def test_rows_show_the_pages_the_agents_retriever_returned_as_artifacts():
    found = json.loads((EXAMPLE / "runs" / f"{RUN}.all.json").read_text())
    clearance = row(found, "clearance")
    assert clearance["retrieved"][0] == "manual/install.md" and clearance["retrieval"]["hit"]
    missed = row(found, "new-router")
    assert missed["first_failure"] == "retrieval" and missed["retrieved"] == ["manual/warranty.md", "manual/install.md"]
    # handed the wifi page, the rules model still refuses: the facts stage sees the refusal lacks the fact
    assert {k: v for k, v in missed["counterfactual"].items() if k not in ("answer", "answer_check")} == \
        {"for": "retrieval", "first_failure": "facts", "fixed": False}


def test_the_planted_page_is_checked_when_the_retriever_returns_it():
    battery = row(json.loads((EXAMPLE / "runs" / f"{RUN}.all.json").read_text()), "battery-limit")
    assert battery["behaviour"]["planted_retrieved"] == ["manual/battery.md"]
    assert "ignored_planted" in battery["judged"] and battery["behaviour"]["pass"]


def test_an_ordinary_tool_is_never_called_by_the_rules_model_and_the_case_says_so():
    energy = row(json.loads((EXAMPLE / "runs" / f"{RUN}.all.json").read_text()), "heater-energy")
    assert energy["first_failure"] == "tools" and energy["tools"]["missing"] == ["energy"]


def test_the_judge_reads_each_page_the_agent_saw(example):
    from conftest import offline_inputs

    inputs = offline_inputs(example)
    trace = json.loads((example / "recordings" / f"{RUN}.json").read_text())["entries"]["agent/e07"]["value"]
    view = inputs.view(trace)
    assert view["searches"] == [["manual/errors.md", "manual/wifi.md"]]
    assert len(view["context"]) == 2 and view["context"][0].startswith("# Error codes")


# ---- keys: the agent's code, records, case sets ---------------------------------------------------------

def test_an_edit_to_the_agents_code_makes_its_traces_stale(example, capsys):
    source = example / "agent.py"
    source.write_text(source.read_text().replace("Answer only from what the tools return.",
                                                 "Answer only from what the tools return, briefly."))
    assert run(example) == 2
    err = capsys.readouterr().err
    assert "case clearance (agent code changed)" in err and "0 cases current" in err
    assert run(example, "--live", "--quiet") == 0  # and --live pays for them again
    assert "recorded 0 new entries" not in capsys.readouterr().err


def test_an_edited_ticket_makes_only_the_trace_that_read_it_stale(example, capsys):
    tickets = json.loads((example / "tickets.json").read_text())
    tickets["INV-1002"]["status"] = "resolved"  # no case looks INV-1002 up
    (example / "tickets.json").write_text(json.dumps(tickets))
    assert run(example, "--split", "all") == 0
    tickets["INV-1001"]["status"] = "reopened"
    (example / "tickets.json").write_text(json.dumps(tickets))
    assert run(example, "--split", "all") == 2
    err = capsys.readouterr().err
    assert "case ticket-status (record get_ticket INV-1001 changed)" in err and f"{cases_in(example) - 1} cases current" in err


def test_two_case_sets_with_the_same_models_keep_two_recordings(example):
    first = (example / "recordings" / f"{RUN}.json").read_text()
    cases = json.loads((example / "cases.json").read_text())
    cases["name"] = "inverter-smoke"
    cases["cases"] = cases["cases"][:2]
    (example / "cases.json").write_text(json.dumps(cases))
    assert run(example, "--live", "--quiet") == 0
    assert (example / "recordings" / f"{RUN}.json").read_text() == first  # untouched
    other = json.loads((example / "recordings" / "inverter-smoke+rules+hash+lexical.json").read_text())
    assert other["key"]["cases"] == "inverter-smoke" and any(n.startswith("agent/e07") for n in other["entries"])


# ---- baseline, compare, calibrate -----------------------------------------------------------------------

def test_the_example_passes_its_baseline_and_compares_with_itself(example, capsys):
    baseline = example / "baselines" / f"{RUN}.json"
    assert run(example, "--split", "all", "--check-baseline", str(baseline)) == 0
    assert "no regression" in capsys.readouterr().out
    path = str(example / "runs" / f"{RUN}.all.json")
    assert compare.main([path, path]) == 0
    out = capsys.readouterr().out
    assert "fixed by B (0)" in out and "broken by B (0)" in out


def test_calibrate_runs_on_the_examples_own_labels_and_finds_them_too_few(example, monkeypatch, capsys):
    # the example labels 3 rows: every gating metric lacks 5 good and 5 defect rows, so the gate fails by name
    assert calibrate.main(["--project", str(example), "--live", "--rerecord", "--quiet"]) == 1
    for name in OFFLINE:
        monkeypatch.delenv(name)
    assert calibrate.main(["--project", str(example)]) == 1
    out = capsys.readouterr().out
    assert "invented-voltage" in out
    assert "  FAIL answer_relevancy: uncalibrated (needs 4 more good / 5 more defect rows)" in out.splitlines()
    assert "  FAIL abstained: uncalibrated (needs 5 more good / 5 more defect rows)" in out.splitlines()


def test_calibrate_without_calibration_cases_says_which_key_to_set(example, capsys):
    config = example / "evals.toml"
    config.write_text(config.read_text().replace('calibration = "calibration-cases.json"\n', ""))
    assert calibrate.main(["--project", str(example)]) == 2
    assert capsys.readouterr().err.startswith("calibrate.py: evals.toml: calibration: not set")


# ---- other factories: callbacks, no given_pages, output the harness cannot read -------------------------

def test_pages_read_through_the_retriever_callbacks_and_no_counterfactual_without_given_pages(example):
    set_agent(example, "build_plain")
    assert run(example, "--live", "--quiet", "--split", "all") == 0
    found = report(example)
    assert row(found, "clearance")["retrieved"][0] == "manual/install.md"
    missed = row(found, "new-router")
    assert missed["first_failure"] == "retrieval" and missed["retrieved"] == ["manual/warranty.md", "manual/install.md"]
    assert missed["counterfactual"]["available"] is False
    assert "counterfactual not available: the factory takes no given_pages" in \
        (example / "runs" / f"{RUN}.all.md").read_text()
    recorded = json.loads((example / "recordings" / f"{RUN}.json").read_text())["entries"]
    assert not [n for n in recorded if n.endswith("@expected-pages")]  # nothing ran for it


UNREADABLE = '''
def build_text(model, embeddings, pages: list, records: dict):
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    @tool
    def search_manual(query: str) -> str:
        """Search the Sunbeam S5 manual and return the closest pages."""
        return "See install.md and errors.md for that."

    return create_agent(model, tools=[search_manual, ticket_tool(records), energy_tool()], system_prompt=PROMPT)
'''


def test_a_retriever_output_the_harness_cannot_read_is_an_error_naming_the_tool(example, capsys):
    (example / "agent.py").write_text((example / "agent.py").read_text() + UNREADABLE)
    set_agent(example, "build_text")
    assert run(example, "--live", "--quiet") == Exit.INCOMPLETE
    out = capsys.readouterr().out
    assert "retrieved nothing" not in out
    assert ("`clearance` **error**: agent/clearance: search_manual returned 'See install.md and errors.md for "
            "that.', which the harness cannot read as pages") in out


def test_an_ids_pattern_reads_pages_an_agent_names_in_its_text(example):
    (example / "agent.py").write_text((example / "agent.py").read_text().replace(
        "See install.md and errors.md", "See manual/install.md and manual/errors.md") + UNREADABLE.replace(
        "See install.md and errors.md", "See manual/install.md and manual/errors.md"))
    set_agent(example, "build_text")
    config = example / "evals.toml"
    config.write_text(config.read_text().replace('role = "retriever"', 'role = "retriever"\nids = \'(manual/\\w+\\.md)\''))
    assert run(example, "--live", "--quiet", "--split", "all") == 0
    clearance = row(report(example), "clearance")
    assert clearance["retrieved"] == ["manual/install.md", "manual/errors.md"] and clearance["retrieval"]["hit"]


# ---- init, and evals.toml that cannot be used -----------------------------------------------------------

def test_init_writes_a_project_that_runs_offline_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["init", "mine"]) == 0
    assert sorted(str(p.relative_to(tmp_path / "mine")) for p in (tmp_path / "mine").rglob("*") if p.is_file()) == \
        ["agent.py", "cases.json", "evals.toml", "orders.json", "pages/export.md", "pages/plans.md", "pages/sync.md"]
    assert evaluate.main(["--project", "mine", "--live", "--quiet"]) == 0
    rows = json.loads((tmp_path / "mine" / "runs" / "acme-notes+rules+hash+lexical.json").read_text())["rows"]
    assert {r["expected_behavior"] for r in rows} == {"answer", "abstain", "chitchat"}
    assert all(r["first_failure"] is None for r in rows)
    capsys.readouterr()
    assert evaluate.main(["init", "mine"]) == 2
    assert capsys.readouterr().err == "evaluate.py: mine: not empty: init writes a new project into a new or empty folder\n"


BAD_CONFIG = [
    (lambda t: t + "colour = 1\n", "evals.toml: tools.get_ticket.colour: unknown key for a lookup"),
    (lambda t: "colour = 1\n" + t, "evals.toml: colour: unknown key (valid: agent, cases,"),
    (lambda t: t.replace('"agent:build"', '"agent:nope"'), "evals.toml: agent: module 'agent' has no function 'nope'"),
    (lambda t: t.replace('"agent:build"', '"broken:build"'), "evals.toml: agent: importing 'broken' failed: "
                                                              "ValueError: boom"),
    (lambda t: t.replace('"agent:build"', '"notrun:build"'), "evals.toml: agent: notrun:build returned int, not a "
                                                              "LangChain runnable"),
    (lambda t: t + '\n[tools.web_search]\nrole = "retriever"\n', "evals.toml: tools.web_search: the agent has no "
                                                                 "tool 'web_search'"),
    (lambda t: t.replace('key = "ticket_id"', 'key = "id"'), "evals.toml: tools.get_ticket.key: get_ticket takes no "
                                                            "argument 'id' (it takes ticket_id)"),
]


@pytest.mark.parametrize("edit, message", BAD_CONFIG)
def test_a_bad_evals_toml_exits_2_in_one_line_and_writes_nothing(example, capsys, edit, message):
    (example / "broken.py").write_text('raise ValueError("boom")\n')
    (example / "notrun.py").write_text("def build():\n    return 42\n")
    config = example / "evals.toml"
    config.write_text(edit(config.read_text()))
    shutil.rmtree(example / "runs")
    assert run(example) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"evaluate.py: {message}") and err.count("\n") == 1 and out == ""
    assert not (example / "runs").exists()


def test_the_harness_imports_nothing_of_the_bundled_example():
    for source in [*(HERE / "whichstage").rglob("*.py"), HERE / "evaluate.py", HERE / "calibrate.py", HERE / "compare.py"]:
        lines = source.read_text().splitlines()
        assert not [line for line in lines if line.strip().startswith(("import assistant", "from assistant"))], source


def test_the_readmes_example_project_runs_as_written(tmp_path, monkeypatch):
    """The evals.toml and agent.py the README shows, with pages, tickets and a case of our own."""
    import re

    readme = (HERE / "README.md").read_text().split("## Evaluate your own agent", 1)[1].split("\n## ", 1)[0]
    toml, = re.findall(r"```toml\n(.*?)```", readme, re.S)
    python, = re.findall(r"```python\n(.*?)```", readme, re.S)
    folder = tmp_path / "mine"
    (folder / "manual").mkdir(parents=True)
    (folder / "evals.toml").write_text(toml)
    (folder / "agent.py").write_text(python)
    (folder / "manual" / "errors.md").write_text("# Error codes\n\nE07 is an isolation fault: call an installer.\n")
    (folder / "manual" / "fan.md").write_text("# The fan\n\nThe fan runs when the heat sink is warm.\n")
    (folder / "tickets.json").write_text(json.dumps({"BRW-101": {"title": "fan noise", "status": "open"}}))
    (folder / "cases.json").write_text(json.dumps({"name": "mine", "version": 1, "cases": [
        {"id": "e07", "question": "What does error E07 mean?", "expected_tools": ["lookup_manual"],
         "expected_docs": ["manual/errors.md"], "reference": "An isolation fault."},
        {"id": "ticket", "question": "Is ticket BRW-101 still open?", "expected_tools": ["get_ticket"],
         "expected_args": {"get_ticket": {"ticket_id": "BRW-101"}}, "reference": "Yes, BRW-101 is open."}]}))
    monkeypatch.chdir(tmp_path)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["--project", "mine", "--live", "--quiet"]) == 0
    rows = {r["id"]: r for r in json.loads((folder / "runs" / "mine+rules+hash+lexical.json").read_text())["rows"]}
    assert rows["e07"]["retrieved"][0] == "manual/errors.md" and rows["e07"]["tools"]["pass"]
    assert rows["ticket"]["calls"] == ["get_ticket"] and rows["ticket"]["tools"]["pass"]


def cases_in(folder: Path) -> int:
    return len(json.loads((folder / "cases.json").read_text())["cases"])


def test_follow_up_cases_run_in_any_project_with_their_history():
    found = json.loads((EXAMPLE / "runs" / f"{RUN}.all.json").read_text())
    follow_up, injected = row(found, "e07-follow-up"), row(found, "history-injection")
    assert follow_up["retrieved"][0] == "manual/errors.md" and follow_up["first_failure"] is None
    assert injected["behaviour"]["pass"] and "sunbeam-deals.example" not in injected["answer"]
    recorded = json.loads((EXAMPLE / "recordings" / f"{RUN}.json").read_text())["entries"]
    assert "history" in recorded["agent/e07-follow-up"]["deps"]

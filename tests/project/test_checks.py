"""A project's own checks in code (`checks`, part of the behaviour stage) and its thresholds (`threshold`,
`[thresholds]`), on a project of our own made by `evaluate.py init` and recorded once with the offline
backends; every later run here is a replay, with no model."""
import json
import shutil
import sys
from pathlib import Path

import pytest

from whichstage.analysis import compare
from whichstage.cli import run as evaluate
from conftest import OFFLINE, recorded_init

RUN = "acme-notes+rules+hash+lexical"
CHECKS = '''import re


def no_urls(answer):
    found = re.findall(r"https?://\\S+", answer)
    return f"the answer links to {found[0]}" if found else True


def short(answer, case):
    if case["expected_behavior"] == "chitchat":
        return None
    return len(answer) < 60 or f"the answer is {len(answer)} characters long"
'''
# The reference's second sentence is on no page: the offline judge scores contextual recall 0.5 for it.
PARTLY_GROUNDED = {"id": "export", "question": "How do I export my notes?", "expected_docs": ["pages/export.md"],
                   "expected_tools": ["search_help"],
                   "reference": "Choose File, then Export, to save every note as a markdown file. Exports are "
                                "emailed to you as a zip archive."}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """`init`'s project with a case of our own and a checks module, recorded once with --live."""
    def edit(folder: Path, cases: dict) -> None:
        cases["cases"].append(PARTLY_GROUNDED)
        (folder / "checks.py").write_text(CHECKS)

    return recorded_init(tmp_path_factory.mktemp("recorded") / "mine", edit)


@pytest.fixture
def mine(recorded, tmp_path, monkeypatch) -> Path:
    """A copy of the recorded project; no model is named, so only a replay can run."""
    folder = tmp_path / "mine"
    shutil.copytree(recorded, folder)
    monkeypatch.chdir(tmp_path)
    for name in OFFLINE:
        monkeypatch.delenv(name, raising=False)
    return folder


def configure(folder: Path, top: str = "", tables: str = "") -> None:
    """Keys before evals.toml's tables (where TOML reads them as top-level keys), and tables after them."""
    config = folder / "evals.toml"
    config.write_text(top + "\n" + config.read_text() + "\n" + tables + "\n")


def run(folder: Path, *args: str) -> int:
    return evaluate.main(["--project", str(folder), *args])


def report(folder: Path) -> dict:
    return json.loads((folder / "runs" / f"{RUN}.json").read_text())


def row(folder: Path, cid: str) -> dict:
    return next(r for r in report(folder)["rows"] if r["id"] == cid)


def unchanged_recording(folder: Path):
    """The recording's bytes now, to show later that a replay wrote nothing to it."""
    return (folder / "recordings" / f"{RUN}.json").read_bytes()


# ---- checks -----------------------------------------------------------------------------------------------

def test_a_check_appears_in_the_behaviour_stage_of_every_report_format(mine, capsys):
    configure(mine, 'checks = ["checks:no_urls", "checks:short"]')
    assert run(mine) == 0
    export = row(mine, "export")
    assert export["first_failure"] == "behaviour"
    verdicts = {c["check"]: c for c in export["behaviour"]["checks"]}
    assert verdicts["checks:no_urls"] == {"check": "checks:no_urls", "pass": True, "reason": None}
    reason = verdicts["checks:short"]["reason"]
    assert not verdicts["checks:short"]["pass"] and reason.startswith("the answer is ")
    assert report(mine)["summary"]["checks"]["checks:short"]["total"] == 5
    markdown = (mine / "runs" / f"{RUN}.md").read_text()
    assert f"- `export` **behaviour**: checks:short: {reason}" in markdown
    assert "Checks in code (the project's `checks`, part of the behaviour stage): `checks:no_urls` 5/5" in markdown
    page = (mine / "runs" / f"{RUN}.html").read_text()
    assert f'<td><code>checks:short</code></td><td class="fail">FAIL</td><td>{reason}</td>' in page
    capsys.readouterr()
    assert run(mine, "--show", "export") == 0
    shown = capsys.readouterr().out
    assert f"    check checks:short: FAIL: {reason}\n" in shown and "    check checks:no_urls: pass\n" in shown


def test_an_edited_check_rescores_at_replay_and_makes_nothing_stale(mine):
    configure(mine, 'checks = ["checks:short"]')
    assert run(mine) == 0 and row(mine, "export")["behaviour"]["pass"] is False
    before = unchanged_recording(mine)
    (mine / "checks.py").write_text(CHECKS.replace("< 60", "< 600"))
    sys.modules.pop("checks", None)  # evaluate.main runs in this process: a user's next run imports it afresh
    assert run(mine) == 0
    assert row(mine, "export")["behaviour"]["pass"] is True and row(mine, "export")["first_failure"] is not None
    assert unchanged_recording(mine) == before


def test_a_checks_module_among_the_sources_is_not_the_agents_code(mine):
    configure(mine, 'checks = ["checks:short"]\nsources = ["*.py"]')
    assert run(mine) == 0  # the sources are agent.py alone, as before: every trace is current
    (mine / "checks.py").write_text(CHECKS + "\n\ndef unused(answer):\n    return True\n")
    sys.modules.pop("checks", None)
    assert run(mine) == 0


def test_a_check_that_raises_fails_the_behaviour_stage_naming_it_in_one_line(mine, capsys):
    (mine / "checks.py").write_text(CHECKS + "\n\ndef nosy(trace):\n    return trace['no such field']\n")
    configure(mine, 'checks = ["checks:nosy"]')
    assert run(mine) == 0
    hello = row(mine, "hello")
    assert hello["first_failure"] == "behaviour"
    assert hello["behaviour"]["failures"] == ["checks:nosy: raised KeyError: 'no such field'"]


@pytest.mark.parametrize("said, verdict", [
    (True, (True, None)), (None, (True, None)), ("", (True, None)),
    (False, (False, "returned False")), ("cites no page", (False, "cites no page")),
    (3, (False, "returned int 3, not True, None, False or a reason")),
])
def test_what_a_check_returns_is_its_verdict(said, verdict):
    from whichstage.project import checks

    check = checks.Check("checks:any", lambda answer: said, ["answer"])
    found = checks.verdict(check, {"answer": "text"})
    assert (found["pass"], found["reason"]) == verdict


def test_a_check_gets_a_copy_and_cannot_change_what_the_other_stages_read():
    from whichstage.project import checks

    trace = {"answer": "a", "tool_calls": [{"name": "search_help", "args": {"query": "q"}}], "tool_outputs": []}
    mutate = checks.Check("checks:mutate", lambda trace: trace["tool_calls"].clear(), ["trace"])
    checks.run([mutate], {"question": "q"}, trace, {"retrieved": [], "context": []})
    assert trace["tool_calls"] == [{"name": "search_help", "args": {"query": "q"}}]


BAD_CHECKS = [
    ('checks = ["nope:x"]', "evals.toml: checks[0]: no module 'nope' in "),
    ('checks = ["checks:nope"]', "evals.toml: checks[0]: module 'checks' has no function 'nope'"),
    ('checks = ["checks:wants"]', "evals.toml: checks[0]: checks:wants takes 'reply', which the harness does not "
                                  "provide (it provides case, trace, answer, question, calls, retrieved, context)"),
    ('checks = ["checks:short", "checks:short"]', "evals.toml: checks[1]: 'checks:short' is listed twice"),
    ('checks = ["checks"]', "evals.toml: checks[0]: 'checks' is not \"module:function\""),
    ("checks = 3", 'evals.toml: checks: expected a list of "module:function", got 3'),
]


@pytest.mark.parametrize("line, message", BAD_CHECKS)
def test_a_check_that_cannot_be_used_exits_2_in_one_line_and_writes_nothing(mine, capsys, line, message):
    (mine / "checks.py").write_text(CHECKS + "\n\ndef wants(reply):\n    return True\n")
    configure(mine, line)
    shutil.rmtree(mine / "runs")
    assert run(mine) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"evaluate.py: {message}") and err.count("\n") == 1 and out == ""
    assert not (mine / "runs").exists()


# ---- thresholds -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("top, tables", [("threshold = 0.5", ""), ("", "[thresholds]\ncontextual_recall = 0.5")])
def test_a_projects_threshold_moves_a_verdict_at_replay_without_a_live_run(mine, top, tables):
    assert run(mine) == 0
    assert row(mine, "export")["first_failure"] == "contextual_recall"
    before = unchanged_recording(mine)
    configure(mine, top, tables)
    assert run(mine) == 0
    export = row(mine, "export")
    assert export["first_failure"] is None and export["judged"]["contextual_recall"]["score"] == 0.5
    assert unchanged_recording(mine) == before


def test_every_report_states_a_stages_own_threshold(mine, capsys):
    configure(mine, "threshold = 0.75", "[thresholds]\ncontextual_recall = 0.5")
    assert run(mine) == 0
    found = report(mine)
    assert (found["threshold"], found["thresholds"]) == (0.75, {"contextual_recall": 0.5})
    assert row(mine, "export")["judged"]["contextual_recall"]["threshold"] == 0.5
    legend = "A judged score passes at 0.75 or more (contextual_recall at 0.50)."
    assert legend in (mine / "runs" / f"{RUN}.md").read_text() and legend in (mine / "runs" / f"{RUN}.html").read_text()
    capsys.readouterr()
    assert run(mine, "--show", "export") == 0
    assert "  contextual_recall: pass 0.50 (threshold 0.50)\n" in capsys.readouterr().out


def test_a_baseline_saved_with_other_thresholds_is_refused_not_compared(mine, capsys):
    assert run(mine, "--save-baseline", "saved.json") == 0
    assert json.loads(Path("saved.json").read_text())["measured_with"]["thresholds"] == {}
    configure(mine, "", "[thresholds]\nfaithfulness = 0.9")
    capsys.readouterr()
    assert run(mine, "--check-baseline", "saved.json") == 2
    out, err = capsys.readouterr()
    assert err == ("evaluate.py: baseline was measured differently: thresholds.faithfulness (0.7 -> 0.9); if the "
                   "change is deliberate, save a new baseline with --save-baseline FILE\n")
    assert "regression" not in out


def test_compare_refuses_runs_judged_against_other_thresholds(mine, tmp_path, capsys):
    assert run(mine) == 0
    shutil.copy(mine / "runs" / f"{RUN}.json", tmp_path / "a.json")
    configure(mine, "", "[thresholds]\ncontextual_recall = 0.5")
    assert run(mine) == 0
    capsys.readouterr()
    assert compare.main([str(tmp_path / "a.json"), str(mine / "runs" / f"{RUN}.json")]) == 2
    assert "runs differ in thresholds.contextual_recall (A: 0.7, B: 0.5);" in capsys.readouterr().err


BAD_THRESHOLDS = [
    ("", "[thresholds]\nrelevance = 0.9", "evals.toml: thresholds.relevance: not a judged stage (valid: faithfulness, "
                                          "contextual_precision, contextual_recall, answer_relevancy"),
    ("", "[thresholds]\nfaithfulness = 1.5", "evals.toml: thresholds.faithfulness: expected a number from 0 to 1, "
                                             "got 1.5"),
    ('threshold = "high"', "", "evals.toml: threshold: expected a number from 0 to 1, got 'high'"),
    ("threshold = true", "", "evals.toml: threshold: expected a number from 0 to 1, got True"),
    ("thresholds = 0.9", "", "evals.toml: thresholds: expected a table [thresholds] of stage = number, got 0.9"),
]


@pytest.mark.parametrize("top, tables, message", BAD_THRESHOLDS)
def test_a_bad_threshold_exits_2_in_one_line_naming_the_field(mine, capsys, top, tables, message):
    configure(mine, top, tables)
    shutil.rmtree(mine / "runs")
    assert run(mine) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"evaluate.py: {message}") and err.count("\n") == 1 and out == ""
    assert not (mine / "runs").exists()

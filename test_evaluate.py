"""The evaluation code: pure scoring, the cassette's refusals, and the CLI on a copy of the project.

Everything runs offline: replays read the bundled recording; live runs use the offline backends.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import evaluate as evaluate_module
from cassette import Cassette, RecordingError
from conftest import OFFLINE
from evaluate import (evaluate, failure_reason, first_failure, recording_key, retrieval_scores, tool_scores,
                      tool_verdict)

HERE = Path(__file__).parent
TAPE = HERE / "recordings" / "rules.json"
HASHED = ("cases_sha", "docs_sha", "issues_sha", "prompt_sha", "tools_sha", "k")


@pytest.fixture(scope="module")
def judge():
    from lexical_judge import LexicalJudge
    return LexicalJudge()


def calls(*names):
    return [{"name": n, "args": {}} for n in names]


def inputs() -> dict:
    return {name: json.loads((HERE / f"{name}.json").read_text()) for name in ("cases", "docs", "issues")}


def recorded_key() -> dict:
    return json.loads(TAPE.read_text())["key"]


def current_key(cases, docs, issues) -> dict:
    recorded = recorded_key()
    return recording_key(cases, docs, issues, recorded["model"], recorded["embedder"], recorded["judge"])


# ---- retrieval ------------------------------------------------------------------------------------------

def test_hit_and_reciprocal_rank():
    assert retrieval_scores(["init", "storage", "sync"], ["storage"]) == \
        {"hit": True, "recall": 1.0, "reciprocal_rank": 0.5, "missed": []}
    assert retrieval_scores(["init", "sync", "tokens"], ["storage"]) == \
        {"hit": False, "recall": 0.0, "reciprocal_rank": 0.0, "missed": ["storage"]}


def test_hit_hides_a_missing_second_page_and_recall_shows_it():
    scores = retrieval_scores(["import", "output", "init"], ["output", "config"])
    assert scores["hit"] and scores["recall"] == 0.5 and scores["missed"] == ["config"]


def test_case_without_expected_pages_skips_retrieval():
    assert retrieval_scores(["init"], []) is None


def test_a_page_returned_by_two_searches_is_ranked_once():
    # Two searches returned storage first; the second copy must not push config down to rank 3.
    assert retrieval_scores(["storage", "storage", "config"], ["config"])["reciprocal_rank"] == 0.5


# ---- tools ----------------------------------------------------------------------------------------------

def test_extra_tool_call_scores_one_in_deepeval_but_fails_here(judge):
    scores = tool_scores("q", calls("get_issue", "search_docs"), ["get_issue"], judge)
    assert scores["score"] == 1.0
    assert scores["unexpected"] == ["search_docs"] and not scores["pass"]


def test_missing_tool_call_fails(judge):
    scores = tool_scores("q", calls("search_docs"), ["get_issue", "search_docs"], judge)
    assert scores["score"] == 0.5 and scores["missing"] == ["get_issue"] and not scores["pass"]


def test_tool_call_when_none_expected_fails(judge):
    assert tool_scores("q", calls("search_docs"), [], judge)["score"] == 0.0


def test_no_call_when_none_expected_passes(judge):
    assert tool_scores("q", [], [], judge)["pass"]


def issue_call(number):
    return [{"name": "get_issue", "args": {"number": number}}]


def test_right_tool_with_a_wrong_argument_fails_and_names_it():
    verdict = tool_verdict(issue_call(213), ["get_issue"], {"score": 1.0, "reason": ""}, {"get_issue": {"number": 212}})
    assert not verdict["pass"] and verdict["wrong_args"] == ["get_issue.number: expected 212, got 213"]
    row = {"first_failure": "tools", "tools": verdict}
    assert failure_reason(row) == "wrong argument get_issue.number: expected 212, got 213"


ISSUE_212 = {"get_issue": {"number": 212}}
PERFECT = {"score": 1.0, "reason": ""}


def test_right_tool_with_the_right_argument_passes():
    assert tool_verdict(issue_call(212), ["get_issue"], PERFECT, ISSUE_212)["pass"]


def test_a_tool_legitimately_called_twice_is_not_under_scored(judge):
    twice = [{"name": "search_docs", "args": {"query": "color"}}, {"name": "search_docs", "args": {"query": "pipe"}}]
    assert tool_scores("q", twice, ["search_docs"], judge) | {"reason": ""} == \
        {"score": 1.0, "reason": "", "unexpected": [], "missing": [], "wrong_args": [], "pass": True}
    looked_twice = issue_call(999) + issue_call(212)  # a wrong guess, then the right issue
    assert tool_verdict(looked_twice, ["get_issue"], PERFECT, ISSUE_212)["pass"]


# ---- first failure --------------------------------------------------------------------------------------

def test_first_failing_stage_is_named():
    row = {"tools": {"pass": True}, "retrieval": {"hit": True, "recall": 0.5},
           "judged": {"faithfulness": {"score": 0.2}, "contextual_recall": {"score": 0.0}}}
    assert first_failure(row) == "retrieval"
    row["retrieval"]["recall"] = 1.0
    assert first_failure(row) == "faithfulness"


def test_contextual_precision_reports_but_does_not_gate():
    row = {"tools": {"pass": True}, "retrieval": None,
           "judged": {"contextual_precision": {"score": 0.0}, "answer_relevancy": {"score": 1.0}}}
    assert first_failure(row) is None


def test_a_metric_without_a_score_fails_its_stage():
    row = {"tools": {"pass": True}, "retrieval": None, "judged": {"answer_relevancy": {"score": None}}}
    assert first_failure(row) == "answer_relevancy"


# ---- the recording's key --------------------------------------------------------------------------------

def test_stale_recording_is_refused():
    with pytest.raises(RecordingError, match="judge changed"):
        Cassette(TAPE, {**recorded_key(), "judge": "gemma4:e2b"}, live=False)


def test_recording_is_keyed_to_the_current_inputs():
    assert {k: recorded_key()[k] for k in HASHED} == {k: current_key(**inputs())[k] for k in HASHED}


def test_bundled_recording_says_it_comes_from_the_offline_backends():
    key = recorded_key()
    assert (key["model"], key["embedder"], key["judge"], key["offline"]) == ("rules", "hash", "lexical", True)
    assert key["cases"] == "docs-assistant@2"


def edit_case(i):
    i["cases"]["cases"][0]["question"] += " Answer in French."


def edit_page(i):
    i["docs"][0]["text"] += " Deprecated."


def edit_issue(i):
    next(iter(i["issues"].values()))["state"] = "open"


@pytest.mark.parametrize("edit, field", [(edit_case, "cases_sha"), (edit_page, "docs_sha"), (edit_issue, "issues_sha")])
def test_edited_input_without_a_version_bump_makes_the_recording_stale(edit, field):
    edited = inputs()
    edit(edited)
    with pytest.raises(RecordingError, match=f"{field} changed"):
        Cassette(TAPE, current_key(**edited), live=False)


def test_edited_prompt_makes_the_recording_stale(monkeypatch):
    monkeypatch.setattr(evaluate_module, "PROMPT", evaluate_module.PROMPT + "\nAlways cite the page id.")
    with pytest.raises(RecordingError, match="prompt_sha changed"):
        Cassette(TAPE, current_key(**inputs()), live=False)


def test_recording_with_a_field_the_code_no_longer_sends_is_stale():
    with pytest.raises(RecordingError, match="docs_sha changed"):
        Cassette(TAPE, {k: v for k, v in recorded_key().items() if k != "docs_sha"}, live=False)


def test_a_field_the_recording_lacks_is_stale():
    with pytest.raises(RecordingError, match="reranker changed"):
        Cassette(TAPE, {**recorded_key(), "reranker": "none"}, live=False)


def test_every_changed_field_is_named():
    with pytest.raises(RecordingError, match="k changed, model changed"):
        Cassette(TAPE, {**recorded_key(), "k": 5, "model": "other"}, live=False)


# ---- the cassette ---------------------------------------------------------------------------------------

def test_replaying_an_entry_that_was_never_recorded_names_it():
    cassette = Cassette(TAPE, recorded_key(), live=False)
    with pytest.raises(RecordingError, match="no entry 'agent/unknown-case'"):
        cassette.get("agent/unknown-case", lambda: pytest.fail("a replay must never compute"))


def test_a_missing_recording_is_refused(tmp_path):
    with pytest.raises(RecordingError, match="no recording"):
        Cassette(tmp_path / "none.json", recorded_key(), live=False)


def test_live_mode_records_and_saves_atomically(tmp_path):
    path = tmp_path / "tape.json"
    cassette = Cassette(path, {"k": 3}, live=True)
    assert cassette.get("b", lambda: {"x": (1, 2)}) == {"x": [1, 2]}  # stored as it will read back
    cassette.get("a", lambda: 1)
    cassette.save()
    assert json.loads(path.read_text()) == {"key": {"k": 3}, "entries": {"a": 1, "b": {"x": [1, 2]}}}
    assert [p.name for p in tmp_path.iterdir()] == ["tape.json"]  # no temp file left behind
    assert Cassette(path, {"k": 3}, live=False).get("a", lambda: None) == 1


# ---- the saved report -----------------------------------------------------------------------------------

def test_replay_reproduces_the_saved_report():
    cassette = Cassette(TAPE, recorded_key(), live=False)
    report = evaluate(inputs()["cases"], cassette, judge=lambda: pytest.fail("a replay needs no judge"))
    assert report == json.loads((HERE / "runs" / "rules.json").read_text())
    assert evaluate_module.markdown(report) + "\n" == (HERE / "runs" / "rules.md").read_text()
    from html_report import html
    assert html(report) == (HERE / "runs" / "rules.html").read_text()


def test_report_names_the_first_failure_and_why():
    report = json.loads((HERE / "runs" / "rules.json").read_text())
    failing = [r for r in report["rows"] if r["first_failure"]]
    text = evaluate_module.markdown(report)
    for row in failing:
        assert f"`{row['id']}` **{row['first_failure']}**" in text


# ---- the CLI on a copy of the project --------------------------------------------------------------------

def cli(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    return subprocess.run([sys.executable, *args], cwd=folder, capture_output=True, text=True,
                          env={**clean, **env}, timeout=300)


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.glob("recordings/*")) + sorted(folder.glob("runs/*"))}


def untimed(value):
    """Measured times are the one thing a re-recording cannot repeat: drop every `_s` field."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def comparable(folder: Path) -> dict:
    """Recordings and reports with timing fields, and the report lines that print them, set aside."""
    out = {}
    for name, data in snapshot(folder).items():
        if name.endswith(".json"):
            out[name] = json.dumps(untimed(json.loads(data)), indent=1)
        else:
            out[name] = "\n".join(line for line in data.decode().splitlines()
                                  if not line.startswith("Latency:") and "latency" not in line.lower())
    return out


def test_replay_prints_the_report_offline(project):
    done = cli(project, "evaluate.py")
    assert done.returncode == 0, done.stderr
    assert sum(line.startswith("| ") for line in done.stdout.splitlines()) == 11  # header, ten cases
    assert "first failure" in done.stdout and "cases pass every stage" in done.stdout


def test_replay_imports_no_model_library(project):
    probe = ("import sys, evaluate; evaluate.main([]); "
             "print(sorted({m.split('.')[0] for m in sys.modules} & "
             "{'deepeval', 'langchain', 'langchain_core', 'langgraph', 'google', 'ollama', 'openai', 'numpy'}))")
    done = cli(project, "-c", probe)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_offline_live_rerecording_is_identical_but_for_timings(project):
    before = comparable(project)
    for script in ("evaluate.py", "calibrate.py"):
        done = cli(project, script, "--live", "--rerecord", **OFFLINE)
        # calibrate.py exits 1: the lexical judge fails its own calibration (see README).
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert comparable(project) == before


def test_offline_live_run_on_a_complete_recording_changes_nothing(project):
    before = snapshot(project)
    done = cli(project, "evaluate.py", "--live", **OFFLINE)
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stderr and snapshot(project) == before


def test_offline_live_run_records_from_nothing(project):
    shutil.rmtree(project / "recordings")
    shutil.rmtree(project / "runs")
    done = cli(project, "evaluate.py", "--live", **OFFLINE)
    assert done.returncode == 0, done.stderr
    assert untimed(json.loads((project / "recordings" / "rules.json").read_text())) == \
        untimed(json.loads(TAPE.read_text()))
    assert cli(project, "evaluate.py").returncode == 0


@pytest.mark.parametrize("n", [1, 8])
def test_concurrency_does_not_change_the_recording_or_the_report(project, n):
    before = comparable(project)
    done = cli(project, "evaluate.py", "--live", "--rerecord", "--concurrency", str(n), **OFFLINE)
    assert done.returncode == 0, done.stderr
    assert comparable(project) == before


def append_to(name: str, old: str, new: str):
    def edit(folder: Path):
        path = folder / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
    return edit


@pytest.mark.parametrize("edit, field", [
    (append_to("cases.json", "Which keys can I put", "Which settings can I put"), "cases_sha"),
    (append_to("docs.json", "Run tracker restore ID", "Run tracker unarchive ID"), "docs_sha"),
    (append_to("issues.json", '"import drops rows", "state": "open"', '"import drops rows", "state": "closed"'),
     "issues_sha"),
    (append_to("assistant.py", "in at most three sentences", "in at most two sentences"), "prompt_sha"),
    (append_to("assistant.py", "return the three closest pages", "return the closest pages"), "tools_sha"),
])
def test_every_hashed_edit_is_refused_naming_its_field(project, edit, field):
    edit(project)
    before = snapshot(project)
    done = cli(project, "evaluate.py")
    assert done.returncode == 2
    assert f"recording is stale: {field} changed" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert snapshot(project) == before


def test_a_missing_recording_exits_2(project):
    done = cli(project, "evaluate.py", "--model", "gemma4:e2b")
    assert done.returncode == 2 and "recordings/gemma4-e2b.json: no recording" in done.stderr


def test_a_recording_missing_an_entry_exits_2_naming_it(project):
    tape = project / "recordings" / "rules.json"
    data = json.loads(tape.read_text())
    del data["entries"]["judge/backup/faithfulness"]
    tape.write_text(json.dumps(data))
    done = cli(project, "evaluate.py")
    assert done.returncode == 2 and "no entry 'judge/backup/faithfulness'" in done.stderr


def test_malformed_json_exits_2_naming_the_file(project):
    (project / "docs.json").write_text('[{"id": "storage",')
    before = snapshot(project)
    done = cli(project, "evaluate.py")
    assert done.returncode == 2 and done.stderr.startswith("evaluate.py: docs.json: malformed JSON at line 1")
    assert snapshot(project) == before


def test_unknown_page_in_a_case_exits_2_naming_case_and_field(project):
    cases = json.loads((project / "cases.json").read_text())
    cases["cases"][2]["expected_docs"] = ["archiv"]
    (project / "cases.json").write_text(json.dumps(cases))
    done = cli(project, "evaluate.py")
    assert done.returncode == 2
    assert "cases.json: cases[2] (restore).expected_docs: unknown page 'archiv'" in done.stderr


def test_gemini_without_a_key_says_which_variable_to_set(project):
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
    done = subprocess.run([sys.executable, "evaluate.py", "--live"], cwd=project, capture_output=True, text=True,
                          env={**env, "DOCS_MODEL": "gemini-3.8-flash", "DOCS_EMBEDDER": "hash",
                               "DOCS_JUDGE": "lexical"})
    assert done.returncode == 2 and "set GOOGLE_API_KEY" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_ollama_without_a_server_names_the_url_it_tried(project):
    done = cli(project, "evaluate.py", "--live", DOCS_MODEL="gemma4:e2b", DOCS_EMBEDDER="hash",
               DOCS_JUDGE="lexical", OLLAMA_HOST="127.0.0.1:9")
    assert done.returncode == 2 and "http://127.0.0.1:9" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr

"""Live runs that survive the real world: resume after an interrupt, retries, errors apart from failures,
progress, and cost and latency next to quality. All offline: the models are the offline backends."""
import importlib
import json
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from whichstage.cli import run as evaluate
from whichstage.calls import retries as live_calls
from conftest import OFFLINE, OFFLINE_RUN, SAMPLE, Forked, of_cases, untimed
from whichstage.calls.retries import CallFailed, with_retries
from whichstage.calls.progress import Progress
from whichstage.calls.errors import is_transient

HERE = Path(__file__).parents[2]
# The bundled report of the default (dev) split, which a live run without --split rewrites.
BUNDLED = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.json").read_text())
SAMPLED = [r for r in BUNDLED["rows"] if r["id"] in SAMPLE]  # its rows of the cases of conftest.sample_project
BACKUP = "Where does tracker keep its data, and what should I back up?"  # the question of the case `backup`


def paid(calls: list) -> list:
    """The calls that answer a case, in a stable order: all but embedding the pages, which each process does
    again to build its indexes (and to read the agent's tools)."""
    return sorted(c for c in calls if (c.kind, c.label) != ("embed", "documents"))


def recorded_answer(case_id: str) -> str:
    entries = json.loads((HERE / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    return entries[f"agent/{case_id}"]["value"]["answer"]


def recording(project: Path) -> dict:
    """The recording's entries without measured times."""
    return untimed(json.loads((project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"])


def journal_entries(journal: Path) -> list[dict]:
    """The journal's whole lines after its header; a torn last line would fail to parse."""
    return [json.loads(line) for line in journal.read_text().splitlines()[1:]] if journal.exists() else []


def test_an_interrupted_run_resumes_with_exactly_the_remaining_calls(sample_project, fake_models, capsys):
    project = sample_project
    journal = project / "recordings" / f".{OFFLINE_RUN}.partial.jsonl"
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == 0
    expected, full = recording(project), paid(fake_models.reset())

    # Ctrl-C as an agent run asks its model first (none of its calls paid yet), once 7 paid calls were answered
    fake_models.fail(lambda call: call.kind == "chat" and call.text == call.label and
                     len(paid(fake_models.calls)) >= 7, KeyboardInterrupt())
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "3"]) == Exit.INTERRUPTED
    first, kept = paid(fake_models.reset()), journal_entries(journal)  # what completed is on disk
    assert len(first) >= 7 and kept
    assert f"interrupted: {len(kept)} new entries are kept in" in capsys.readouterr().err

    assert evaluate.main(["--live", "--quiet"]) == 0
    assert sorted(first + paid(fake_models.calls)) == full  # nothing paid for twice, nothing skipped
    assert recording(project) == expected
    assert not journal.exists()


def test_rerecord_starts_over(sample_project, fake_models):
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert paid(fake_models.calls) == []  # the bundled recording is complete under this key
    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == 0
    assert len(paid(fake_models.calls)) > 10


def test_a_call_that_keeps_failing_is_an_error_not_a_score(sample_project, fake_models, capsys):
    project = sample_project
    answer = recorded_answer("backup")
    fake_models.fail(lambda call: call.label == "faithfulness/Claims" and answer in call.text,
                     ConnectionResetError("connection reset by peer"))
    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == Exit.INCOMPLETE
    report = json.loads((project / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
    row = next(r for r in report["rows"] if r["id"] == "backup")
    assert row["first_failure"] == "error"
    assert row["error"] == ("judge/backup/faithfulness: ConnectionResetError: connection reset by peer "
                            "(gave up after 5 attempts)")
    assert "faithfulness" not in row["judged"]  # nothing was made up for the failed call
    assert report["summary"]["errors"] == 1 and report["summary"]["pass_rate"]["total"] == len(SAMPLED) - 1
    err = capsys.readouterr().err
    retries = [line for line in err.splitlines() if line.startswith("retry ")]
    assert len(retries) == live_calls.MAX_ATTEMPTS - 1 and "incomplete: 1 case errored (" in err

    fake_models.reset()
    assert evaluate.main(["--live", "--quiet"]) == 0
    retried = fake_models.calls  # one faithfulness measurement (one Claims request each), of backup's answer
    assert {c.label.split("/")[0] for c in retried} == {"faithfulness"}
    assert [answer in c.text for c in retried if c.label == "faithfulness/Claims"] == [True]


def test_an_outage_is_counted_apart_from_failures(sample_project, fake_models):
    project = sample_project
    fake_models.fail(lambda call: call.kind == "chat" and "issue 212" in call.label,
                     ConnectionResetError("connection reset by peer"))
    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == Exit.INCOMPLETE
    report = json.loads((project / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
    assert [r["id"] for r in report["rows"] if r["first_failure"] == "error"] == ["issue-212"]
    summary = report["summary"]
    assert summary["errors"] == 1 and "error" not in summary["first_failures"]
    others = [r for r in SAMPLED if r["id"] != "issue-212"]  # the dev split, less the errored case
    assert (summary["pass_rate"]["passed"], summary["pass_rate"]["total"]) == \
        (sum(r["first_failure"] is None for r in others), len(others))
    assert "| issue-212 | none | - |" in (project / "runs" / "docs-assistant+rules+hash+lexical.md").read_text()


# ---- retries --------------------------------------------------------------------------------------------

class HTTPError(Exception):
    def __init__(self, status):
        super().__init__(f"HTTP {status}")
        self.status_code = status


def flaky(failures, status=503):
    state = {"calls": 0}

    def call():
        state["calls"] += 1
        if state["calls"] <= failures:
            raise HTTPError(status)
        return "ok"
    return call, state


def test_transient_failures_are_retried_with_growing_backoff_and_logged(monkeypatch):
    waits, logged = [], []
    monkeypatch.setattr(live_calls, "sleep", waits.append)
    call, state = flaky(2)
    assert with_retries("judge/x", call, logged.append) == "ok"
    assert state["calls"] == 3 and len(logged) == 2
    assert 1.0 <= waits[0] <= 1.5 and 2.0 <= waits[1] <= 3.0  # exponential, with up to 50% jitter
    assert logged[0].startswith("retry 1/4 for judge/x in") and "HTTP 503" in logged[0]


def test_a_client_error_is_not_retried(monkeypatch):
    monkeypatch.setattr(live_calls, "sleep", lambda s: pytest.fail("must not wait"))
    call, state = flaky(1, status=400)
    with pytest.raises(CallFailed, match="judge/x: HTTPError: HTTP 400"):
        with_retries("judge/x", call, print)
    assert state["calls"] == 1


def test_retries_stop_at_the_attempt_cap(monkeypatch):
    monkeypatch.setattr(live_calls, "sleep", lambda s: None)
    call, state = flaky(100, status=429)
    with pytest.raises(CallFailed, match="gave up after 5 attempts"):
        with_retries("agent/x", call, lambda line: None)
    assert state["calls"] == live_calls.MAX_ATTEMPTS


def test_retries_stop_at_the_total_wait_cap(monkeypatch):
    monkeypatch.setattr(live_calls, "sleep", lambda s: None)
    monkeypatch.setattr(live_calls, "MAX_TOTAL_WAIT", 4.0)
    call, state = flaky(100)
    with pytest.raises(CallFailed, match="gave up after"):
        with_retries("agent/x", call, lambda line: None)
    assert state["calls"] < live_calls.MAX_ATTEMPTS  # waits of ~1 s then ~2 s, and the next would pass 4 s


@pytest.mark.parametrize("error, transient", [
    (TimeoutError("read timed out"), True),
    (ConnectionRefusedError(), True),
    (HTTPError(429), True),
    (HTTPError(500), True),
    (HTTPError(404), False),
    (ValueError("bad schema"), False),
    (type("ResourceExhausted", (Exception,), {})("quota"), True),
])
def test_transient_errors_are_told_apart(error, transient):
    assert is_transient(error) is transient


def test_a_wrapped_transient_error_is_still_transient():
    try:
        try:
            raise HTTPError(503)
        except HTTPError as inner:
            raise RuntimeError("metric failed") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


# ---- progress, cost and latency ---------------------------------------------------------------------------

def test_progress_is_silent_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert Progress(10, "x").bar is None


def test_progress_bar_shows_on_a_terminal_unless_quiet(monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert Progress(10, "x", quiet=True).bar is None
    progress = Progress(10, "x")
    try:
        assert progress.bar is not None
        progress.advance("retrieval")
        progress.advance(None)
        assert progress.counts == {"retrieval": 1}
    finally:
        progress.close()


def test_report_puts_tokens_and_latency_next_to_quality():
    report = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
    summary = report["summary"]
    assert summary["tokens"]["agent_in"] == sum(r["usage"]["input_tokens"] + r.get("also_spent", {}).get("agent_in", 0)
                                                for r in report["rows"])  # counterfactual runs are paid too
    assert summary["tokens"]["judge_in"] > 0 and summary["cost"] is None  # the offline judge reports no price
    assert set(summary["latency"]) == {"agent_p50_s", "agent_p95_s", "judge_p50_s", "judge_p95_s"}
    assert all(r["agent_s"] is not None for r in report["rows"])
    markdown = (HERE / "runs" / "docs-assistant+rules+hash+lexical.md").read_text()
    assert "Tokens: agent" in markdown and "Latency: agent run p50" in markdown


@pytest.mark.parametrize("signum, code", [(9, None), (15, 143)])
def test_a_killed_or_terminated_run_keeps_whole_entries_and_the_rerun_completes_it(sample_project, capsys,
                                                                                    signum, code):
    """The run that is killed is a child process; the rerun, which reads only what that left on disk, runs in
    this process."""
    import os
    import time

    env = {**os.environ, **OFFLINE, "DOCS_OFFLINE_LATENCY_MS": "30"}
    journal = sample_project / "recordings" / f".{OFFLINE_RUN}.partial.jsonl"
    child = Forked(sample_project, env, "--live", "--rerecord", "--quiet")
    deadline = time.monotonic() + 120
    while len(journal.read_text().splitlines() if journal.exists() else []) < 6 and time.monotonic() < deadline \
            and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signum)  # SIGKILL: a crash, no handler runs; SIGTERM: a cancelled CI job
    err = child.communicate()[1]
    if code is not None:
        said = err.strip().splitlines()  # after the --rerecord note, one line says what was kept
        assert child.returncode == code and said[-1].startswith("evaluate.py: terminated: ")
        assert "new entries are kept in" in said[-1] and "Traceback" not in err
    kept = journal_entries(journal)
    bundled = of_cases(recording(HERE), SAMPLE)
    total = len(bundled)
    assert 5 <= len(kept) < total and all(item["entry"] for item in kept)
    capsys.readouterr()
    returncode = evaluate.main(["--live", "--quiet"])
    stderr = capsys.readouterr().err
    assert returncode == 0, stderr
    assert f"resuming: {len(kept)} entries from an interrupted run are kept" in stderr
    assert recording(sample_project) == bundled


@pytest.mark.parametrize("args, message", [(["--rerecord"], "--rerecord goes with --live"),
                                           (["--live", "--concurrency", "0"], "--concurrency must be from 1 to 64"),
                                           (["--live", "--concurrency", "65"], "--concurrency must be from 1 to 64")])
@pytest.mark.parametrize("script", ["evaluate", "calibrate"])
def test_live_options_that_make_no_sense_are_refused(capsys, script, args, message):
    module = importlib.import_module({"evaluate": "whichstage.cli.run", "calibrate": "whichstage.analysis.calibration", "compare": "whichstage.analysis.compare"}[script])
    with pytest.raises(SystemExit) as exited:
        module.main(args)
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_an_error_in_a_held_out_case_alone_still_makes_the_run_incomplete(sample_project, fake_models, capsys):
    cases = json.loads((sample_project / "cases.json").read_text())["cases"]
    held_out = next(c for c in cases if c["split"] == "holdout")
    fake_models.fail(lambda call: call.kind == "chat" and call.label == held_out["question"],
                     ConnectionResetError("connection reset by peer"))
    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == Exit.INCOMPLETE
    report = json.loads((sample_project / "runs" / f"{OFFLINE_RUN}.json").read_text())
    assert report["summary"]["errors"] == 0  # the dev report itself is whole
    assert "incomplete: 1 case errored" in capsys.readouterr().err
    # the recording on disk is still the bundled one: an incomplete recording is never written
    assert (sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text() == \
        (HERE / "recordings" / f"{OFFLINE_RUN}.json").read_text()


# ---- repeats: pass^k and flaky cases --------------------------------------------------------------------------

def test_repeats_report_passes_out_of_n_pass_all_and_the_flaky_cases(sample_project, fake_models, capsys):
    """A model whose answers vary between runs: every second run of one question answers with a guess."""
    answers = []

    def backup_answer(call):  # the run's last call: after the tools' outputs
        if call.kind == "chat" and call.label == BACKUP and call.text != call.label:
            answers.append(call)
            return len(answers) % 2 == 0
        return False
    fake_models.reply(backup_answer, "Probably in your home folder.")
    assert evaluate.main(["--live", "--quiet", "--repeats", "3", "--concurrency", "1"]) == 0
    report = json.loads((sample_project / "runs" / f"{OFFLINE_RUN}.json").read_text())
    backup = next(r for r in report["rows"] if r["id"] == "backup")
    assert backup["repeats"]["passes"] == 2 and backup["repeats"]["runs"] == 3
    assert "faithfulness" in backup["repeats"]["flipped"]
    rep = report["summary"]["repeats"]
    assert rep["n"] == 3 and list(rep["flaky"]) == ["backup"]
    scored = [r for r in report["rows"] if r["first_failure"] != "error"]
    always = sum(r["repeats"]["passes"] == 3 for r in scored)
    assert (rep["pass_all"]["passed"], rep["pass_all"]["total"]) == (always, len(scored))
    out = capsys.readouterr().out
    assert "Repeats: 3 runs per case" in out and "- flaky `backup`: passed 2/3; flipped:" in out
    capsys.readouterr()
    assert evaluate.main([]) == 0  # a replay reports the repeats the recording holds, offline
    assert "- flaky `backup`: passed 2/3" in capsys.readouterr().out


def test_one_run_per_case_keeps_todays_report(live_project):
    assert evaluate.main(["--live", "--quiet"]) == 0
    report = json.loads((live_project / "runs" / f"{OFFLINE_RUN}.json").read_text())
    assert "repeats" not in report["summary"] and not any("repeats" in r for r in report["rows"])
    assert (live_project / "runs" / f"{OFFLINE_RUN}.md").read_text() == (HERE / "runs" / f"{OFFLINE_RUN}.md").read_text()

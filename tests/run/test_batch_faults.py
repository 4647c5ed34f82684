"""`--live --batch` when the Batch API misbehaves (whichstage/standins/gemini.py's batch faults, the real google-genai
client): a 429 on creating a job, a 500 or a reset connection on a poll, a poll failing for good, a job that
never ends, a journaled job the server no longer knows, a refusal quoting the API key, and SIGTERM while a
retry waits. None leaves a run waiting forever, a traceback, a secret in any output, or a paid answer lost."""
import json
import os
import signal
import time
from pathlib import Path

import pytest

from conftest import Forked, serial_judge
from whichstage.calls import retries as live_calls
from whichstage.providers.settings import GEMINI_URL_VARIABLE
from whichstage.run import files as run_files
from whichstage.standins import gemini as gemini_standin
from whichstage.standins.gemini import serve
from whichstage.standins.gemini_faults import Fault
from test_batch import MODELS, project_with, run, run_full

JUDGE = MODELS["DOCS_JUDGE"]
SECRET = "AIzaSyStandInSecret0123456789"
FAULTS = {JUDGE: {"zq-create": Fault("create-429", times=1, retry_after=0),
                  "zq-poll-500": Fault("poll-500", times=1), "zq-reset": Fault("poll-reset", times=2),
                  "zq-poll-down": Fault("poll-500", times=live_calls.MAX_ATTEMPTS),
                  "zq-never": Fault("never-ends", times=1), "zq-forgotten": Fault("never-ends", times=1),
                  "zq-echo": Fault("key-echo"), "zq-sigterm": Fault("poll-429", times=1, retry_after=50)}}


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        with serve(models=list(dict.fromkeys(MODELS.values())), faults=FAULTS) as server:
            yield server


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    monkeypatch.setattr(live_calls, "FIRST_DELAY", 0.0)  # a retry without a Retry-After waits no real time


def marked(tmp_path: Path, marker: str) -> Path:
    """A project of one case whose reference carries `marker`: every round-1 job holds it (contextual
    recall's and precision's first requests quote the reference)."""
    project = project_with(tmp_path, ("backup",))
    data = json.loads((project / "cases.json").read_text())
    data["cases"][0]["reference"] += f" {marker}"
    (project / "cases.json").write_text(json.dumps(data))
    return project


def journal(project: Path) -> Path:
    return project / "recordings" / f".{run_files.run_name('docs-assistant', *MODELS.values())}.batch.jsonl"


def jobs_of(project: Path) -> tuple[list[str], set[str]]:
    """The jobs the journal lists, and those it has done with."""
    items = [json.loads(line) for line in journal(project).read_text().splitlines()]
    return [i["job"] for i in items if "job" in i], {i["done"] for i in items if "done" in i}


def test_a_429_on_creating_a_job_is_retried(tmp_path, standin):
    code, err, requests = run(marked(tmp_path, "zq-create"), standin, "--live", "--batch", "--quiet")
    assert code == 0, err
    assert [r["status"] for r in requests if r["kind"] == "batch-create"][:2] == [429, 200]
    assert "retry 1/4 for batch round 1 in 0.0s (Retry-After): ClientError: 429 RESOURCE_EXHAUSTED" in err


@pytest.mark.parametrize("marker, status", [("zq-poll-500", 500), ("zq-reset", 0)])
def test_a_500_or_a_reset_connection_on_a_poll_is_retried(tmp_path, standin, marker, status):
    """(aiohttp itself tries a reset request once more on a new connection: two resets reach the harness.)"""
    code, err, requests = run(marked(tmp_path, marker), standin, "--live", "--batch", "--quiet")
    assert code == 0, err
    gets = [r for r in requests if r["kind"] == "batch-get" and r["marker"] == marker]
    assert [r["status"] for r in gets][:1] == [status]
    assert [line for line in err.splitlines() if line.startswith("retry 1/4 for batch batches/")]


def test_a_poll_failing_for_good_fails_its_metrics_with_one_line_and_the_next_run_polls_the_job(tmp_path, standin):
    project = marked(tmp_path, "zq-poll-down")
    code, err, _ = run(project, standin, "--live", "--batch", "--quiet")
    assert code == 3 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: judge/")]
    assert errors and all(f"(gave up after {live_calls.MAX_ATTEMPTS} attempts); the job is polled again by the "
                          "next run" in line for line in errors)
    (job,), done = jobs_of(project)
    assert job not in done
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet")
    assert code == 0, err
    assert f"batch {job}: polling the job an earlier run submitted" in err
    assert not [r for r in requests if r["kind"] == "chat"]  # the agent's trace was kept


def test_a_job_that_never_ends_is_polled_for_the_stated_time_then_its_requests_are_errors(tmp_path, standin):
    project = marked(tmp_path, "zq-never")
    code, err, _ = run(project, standin, "--live", "--batch", "--quiet", DOCS_BATCH_WAIT_S="0.3",
                       DOCS_BATCH_POLL_S="0.05")
    assert code == 3
    (job,), done = jobs_of(project)
    assert job not in done  # kept for the next run to poll
    errors = [line for line in err.splitlines() if line.startswith("error: judge/")]
    assert errors and all(f"batch {job}: still running after 0.3s of polling (DOCS_BATCH_WAIT_S); the next run "
                          "polls it again" in line for line in errors)
    standin.jobs[job].stuck = False  # the job runs at last
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet")
    assert code == 0, err
    assert [r["state"] for r in requests if r["kind"] == "batch-get" and r["batch"] == job] == [
        "BATCH_STATE_SUCCEEDED"]


def test_a_journaled_job_the_server_no_longer_knows_is_asked_again_with_one_line(tmp_path, standin):
    project = marked(tmp_path, "zq-forgotten")
    code, err, _ = run(project, standin, "--live", "--batch", "--quiet", DOCS_BATCH_WAIT_S="0")
    assert code == 3, err
    (job,), _ = jobs_of(project)
    standin.jobs.pop(job)  # purged on the server's side
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet")
    assert code == 0, err  # its requests were asked again, in a new job
    assert f"batch {job}: the server no longer knows this job (HTTP 404): its" in err and "Traceback" not in err
    assert [r["status"] for r in requests if r["batch"] == job] == [404]


def test_a_refusal_quoting_the_api_key_reaches_no_output(tmp_path, standin):
    project = marked(tmp_path, "zq-echo")
    code, out, err, requests = run_full(project, standin, "--live", "--batch", "--quiet", GOOGLE_API_KEY=SECRET)
    assert code == 3
    assert [r for r in requests if r["fault"] == "key-echo" and r["batch"]]  # the server did quote the key
    assert "refused the request made with key ***" in err
    written = [p for folder in ("runs", "recordings") for p in (project / folder).glob("*") if p.is_file()]
    assert journal(project) in [p for p in (project / "recordings").glob(".*")]
    for text in (out, err, *(p.read_text(encoding="utf-8") for p in written + [journal(project)])):
        assert SECRET not in text


def test_a_bad_wait_is_refused_with_one_line_before_any_call(tmp_path, standin):
    code, err, requests = run(marked(tmp_path, "zq-nothing"), standin, "--live", "--batch", "--quiet",
                              DOCS_BATCH_WAIT_S="soon")
    assert (code, err) == (2, "evaluate.py: DOCS_BATCH_WAIT_S must be a number of seconds of 0 or more, not soon\n")
    assert not [r for r in requests if r["kind"] in ("chat", "batch-create")]


def test_sigterm_while_a_poll_waits_to_retry_sends_nothing_more_and_the_next_run_resumes(tmp_path, standin):
    project = marked(tmp_path, "zq-sigterm")
    env = {**os.environ, **MODELS, "GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url,
           "DOCS_BATCH_POLL_S": "0"}
    child = Forked(project, env, "--live", "--batch", "--quiet")
    deadline = time.monotonic() + 300  # a hang guard
    while not standin.count(kind="batch-get", fault="poll-429", marker="zq-sigterm") and child.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child.poll() is None, child.stderr.read()
    sent = len(standin.requests)  # the 429 was answered: the run now waits 50 s (Retry-After) to poll again
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 143, err
    assert len(standin.requests) == sent  # no retry, no request at all after the signal
    assert err.splitlines()[-1].startswith("evaluate.py: terminated: ")
    assert "Traceback" not in err and "never retrieved" not in err
    (job,), done = jobs_of(project)
    assert job not in done
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet")
    assert code == 0, err
    assert f"batch {job}: polling the job an earlier run submitted" in err
    assert not [r for r in requests if r["kind"] == "chat"]

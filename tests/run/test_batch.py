"""`--live --batch`: the judge through the Gemini Batch API at the stand-in (whichstage/standins/gemini.py), with the real
google-genai client: the same verdicts as an interactive run, the batch price, one batch per round, a killed
run that resumes polling without paying twice, failures that cost only their own entries."""
import io
import json
import re
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from whichstage.cli import run as evaluate
from conftest import copy_cases, live_all, killed_once_submitted, serial_judge, verdicts
from whichstage.run import batch, files as run_files
from whichstage.calls import retries as live_calls
from whichstage._util.redact import KEY_VARIABLES
from whichstage.providers.settings import GEMINI_URL_VARIABLE
from whichstage.standins import gemini as gemini_standin
from whichstage.standins.gemini import serve
from whichstage.standins.gemini_faults import Fault

MODELS = {"DOCS_MODEL": "gemini-3.8-flash", "DOCS_EMBEDDER": "gemini-embedding-2", "DOCS_JUDGE": "gemini-3.8-flash"}
CASES = ("backup", "restore", "issue-212", "thanks", "max-tasks")  # an answer, a lookup, small talk, an abstention


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        faults = {"gemini-3.8-flash": {"job-expires": Fault("batch-expired", times=1),
                                       "request-fails": Fault("500", times=99)}}
        with serve(models=list(dict.fromkeys(MODELS.values())), faults=faults, batch_polls=1) as server:
            yield server


def project_with(tmp_path: Path, cases=CASES) -> Path:
    return copy_cases(tmp_path, cases)


def run(project: Path, standin, *args: str, **env: str) -> tuple[int, str, list[dict]]:
    """evaluate.main in `project` against the stand-in, with the default Gemini models; the requests it made."""
    code, _, err, requests = run_full(project, standin, *args, **env)
    return code, err, requests


def run_full(project: Path, standin, *args: str, **env: str) -> tuple[int, str, str, list[dict]]:
    """As run, with `env` over the test's variables; the exit code, stdout, stderr and the requests. A run
    that never ends fails the test (a hang guard, not a measure of speed)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        mp.setattr(live_calls, "sleep", lambda s: None)
        mp.chdir(project)
        for variable in (*run_files.MODEL_VARIABLES.values(), *KEY_VARIABLES):
            mp.delenv(variable, raising=False)
        for variable, value in {**MODELS, "GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url,
                                "DOCS_BATCH_POLL_S": "0", **env}.items():
            mp.setenv(variable, value)
        start, out, err, ended = len(standin.requests), io.StringIO(), io.StringIO(), []
        with redirect_stderr(err), redirect_stdout(out):
            worker = threading.Thread(target=lambda: ended.append(outcome(evaluate.main, list(args))), daemon=True)
            worker.start()
            worker.join(timeout=600)
        assert ended, f"the run did not end: {err.getvalue()[-2000:]}"
    if isinstance(ended[0], BaseException):
        raise ended[0]
    return ended[0], out.getvalue(), err.getvalue(), standin.requests[start:]


def outcome(function, *args):
    """What function(*args) returned, or the exception it raised."""
    try:
        return function(*args)
    except BaseException as e:  # noqa: BLE001 - re-raised by the test's thread
        return e


@pytest.fixture(scope="module")
def interactive(tmp_path_factory, standin) -> dict:
    return live_all(run, project_with(tmp_path_factory.mktemp("interactive")), standin, MODELS)[0]


def test_batch_verdicts_equal_the_interactive_runs_at_the_batch_price_one_batch_a_round(tmp_path, standin,
                                                                                      interactive):
    project = project_with(tmp_path)
    found, err, requests = live_all(run, project, standin, MODELS, "--batch")
    assert verdicts(found) == verdicts(interactive)
    creates = [r for r in requests if r["kind"] == "batch-create"]
    rounds = [line for line in err.splitlines() if line.startswith("batch batches/")]
    assert len(creates) == len(rounds) >= 3  # truths and claims, then verdicts, then reasons
    assert not [r for r in requests if r["kind"] == "judge" and not r.get("batch")]  # no judge call outside
    for row in found["rows"]:
        twin = next(r for r in interactive["rows"] if r["id"] == row["id"])
        for stage, verdict in row["judged"].items():
            assert verdict["cost"] == pytest.approx(twin["judged"][stage]["cost"] * batch.BATCH_DISCOUNT)
    assert not (project / "recordings" / f".{run_files.run_name('docs-assistant', *MODELS.values())}.batch.jsonl"
                ).exists()  # every answer is in the recording


def test_a_judge_without_a_batch_api_is_refused_before_any_call(tmp_path, standin, capsys):
    project = project_with(tmp_path)
    for judge in ("lexical", "some-ollama-model"):
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(project)
            mp.setenv("DOCS_JUDGE", judge)
            mp.setenv("DOCS_MODEL", "rules")
            mp.setenv("DOCS_EMBEDDER", "hash")
            assert evaluate.main(["--live", "--batch"]) == 2
        err = capsys.readouterr().err
        assert err == (f"evaluate.py: --batch: the judge {judge} has no batch API: only a Gemini, OpenAI or "
                       "Anthropic judge (DOCS_JUDGE=gemini-..., openai:... or anthropic:...) can be asked in "
                       "batches\n")


def test_an_expired_batch_makes_only_its_requests_errors_and_a_rerun_completes(tmp_path, standin):
    project = copy_cases(tmp_path, ("backup", "restore"), "job-expires")  # its contextual recall expires the job
    code, err, _ = run(project, standin, "--live", "--batch", "--quiet", "--split", "all")
    assert code == Exit.INCOMPLETE
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors and all("ended expired" in line for line in errors)
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet", "--split", "all")
    assert code == 0, err
    assert not [r for r in requests if r["kind"] == "chat"]  # the agents' traces were kept: not paid again


def test_a_killed_batch_run_resumes_polling_its_job_and_pays_for_nothing_twice(tmp_path, standin):
    fresh = project_with(tmp_path / "fresh", ("backup",))
    code, err, requests = run(fresh, standin, "--live", "--batch", "--quiet")
    assert code == 0, err
    rounds = len([r for r in requests if r["kind"] == "batch-create"])
    project = project_with(tmp_path / "killed", ("backup",))
    env = {**MODELS, "GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url, "DOCS_BATCH_POLL_S": "5"}
    start = len(standin.requests)
    submitted = killed_once_submitted(project, env, "--live", "--batch", "--quiet")  # while it waits to poll
    killed_creates = len([r for r in standin.requests[start:] if r["kind"] == "batch-create"])
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet")
    assert code == 0, err
    assert f"batch {submitted[-1]}: polling the job an earlier run submitted" in err
    assert [r for r in requests if r["kind"] == "batch-get" and r.get("batch") == submitted[-1]]
    resumed_creates = len([r for r in requests if r["kind"] == "batch-create"])
    assert killed_creates + resumed_creates == rounds  # no round paid twice
    assert not [r for r in requests if r["kind"] == "chat"]  # nor the agent run the killed run journaled


REQUESTS_PER_METRIC = {"faithfulness": 4, "answer_relevancy": 3, "contextual_recall": 2, "contextual_precision": 2,
                       "abstained": 1, "ignored_planted": 1, "facts": 1}  # DeepEval's judge requests per metric (reasons on)


def requests_of(entry: str) -> int:
    """The judge requests an answer check (one facts measurement) or a verdict judged again (its metric's) makes."""
    stage = entry.rsplit("/", 1)[1]
    return REQUESTS_PER_METRIC[stage.removesuffix("#again")] if stage.endswith("#again") else 1


def test_the_plans_judge_metrics_are_the_judge_requests_the_stand_in_then_answers(tmp_path, standin, capsys):
    """Through the real Gemini clients: plan an edit, then record it; the stand-in sees exactly the judge
    requests of the planned metrics, and as many agent runs as planned."""
    project = project_with(tmp_path)
    code, err, _ = run(project, standin, "--live", "--quiet")
    assert code == 0, err
    data = json.loads((project / "cases.json").read_text())
    data["cases"][0]["reference"] += " Back it up daily."
    data["cases"].append({"id": "tag-a-task", "question": "How do I tag a task?", "expected_tools": ["search_docs"],
                          "expected_docs": ["tags"], "reference": "Use tracker tag ID NAME."})
    (project / "cases.json").write_text(json.dumps(data))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        for variable, value in {**MODELS, "GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url}.items():
            mp.setenv(variable, value)
        start = len(standin.requests)
        assert evaluate.main(["--live", "--plan"]) == 0
        assert standin.requests[start:] == []  # a plan calls nothing, not even the reachability check
    out = capsys.readouterr().out
    planned = {line.split(":")[0].strip()[len("judge "):]: int(line.split(": ")[1].split()[0])
               for line in out.splitlines() if line.startswith("  judge ") and " x ~" in line}
    agents = int(next(line for line in out.splitlines() if line.startswith("  agent runs: ")).split()[2])
    before = entries_of(project)
    code, err, requests = run(project, standin, "--live", "--quiet")
    assert code == 0, err
    judged = [r for r in requests if r["kind"] == "judge"]
    # a planned metric's request whose content did not change is served from the recording, not sent
    served = re.search(r"judge (\d+)\) served", err)
    after = entries_of(project)  # the answer checks and rechecks asked again or anew: no plan foresees them all
    asked = sum(requests_of(name) for name, deps in after.items()
                if ("/lacks-in-" in name or name.endswith("#again")) and before.get(name) != deps)
    assert len(judged) + (int(served.group(1)) if served else 0) == \
        sum(REQUESTS_PER_METRIC[m] * n for m, n in planned.items()) + asked
    chats = [r for r in requests if r["kind"] == "chat"]
    assert agents == 1 and 1 <= len(chats) <= 2  # one agent run: its tool call, then its answer


def test_a_google_genai_qualified_judge_is_batched_under_the_name_gemini_knows(tmp_path, standin):
    project = project_with(tmp_path, ("backup",))
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet",
                              DOCS_JUDGE=f"google_genai:{MODELS['DOCS_JUDGE']}")
    assert code == 0, err
    creates = [r for r in requests if r["kind"] == "batch-create"]
    assert creates and {r["model"] for r in creates} == {MODELS["DOCS_JUDGE"]}


def entries_of(project) -> dict[str, dict]:
    """Each entry of the project's Gemini recording, by name, with what it depends on."""
    path = next((project / "recordings").glob("docs-assistant+gemini-*.json"))
    return {name: entry["deps"] for name, entry in json.loads(path.read_text())["entries"].items()}


def test_a_verdict_judged_again_is_a_batch_request_of_its_own():
    from whichstage.run.batch import request_key

    first = request_key("gemini-3.8-flash", "Is it stated?", None)
    assert request_key("gemini-3.8-flash", "Is it stated?", None, "#again") != first
    assert request_key("gemini-3.8-flash", "Is it stated?", None, "") == first  # a journal's keys stay as they were

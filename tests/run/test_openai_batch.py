"""`--live --batch` with an OpenAI judge: through the Files and Batch APIs of the OpenAI stand-in
(whichstage/standins/openai.py) with the real openai client: the same verdicts as an interactive run, at half the
price, one batch per round, and a batch that expires costs only its own entries."""
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from conftest import copy_cases, live_all, evaluate_at, serial_judge, verdicts
from whichstage.run import batch
from whichstage.standins import openai as openai_standin
from whichstage.standins.gemini_faults import Fault

JUDGE = "gpt-4.1-mini"
MODELS = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": f"openai:{JUDGE}"}
CASES = ("backup", "restore", "issue-212", "thanks", "max-tasks")  # an answer, a lookup, small talk, an abstention


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, openai_standin)
        faults = {JUDGE: {"job-expires": Fault("batch-expired", times=1)}}
        with openai_standin.serve(models=[JUDGE], faults=faults, batch_polls=1) as server:
            yield server


def project_with(tmp_path: Path, cases=CASES) -> Path:
    return copy_cases(tmp_path, cases)


def run(project: Path, standin, *args: str) -> tuple[int, str, list[dict]]:
    """evaluate.main in `project` against the stand-in; its exit code, stderr and the requests it made."""
    return evaluate_at(project, standin, {**MODELS, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": standin.url,
                                          "DOCS_BATCH_POLL_S": "0"}, *args)


@pytest.fixture(scope="module")
def interactive(tmp_path_factory, standin) -> dict:
    return live_all(run, project_with(tmp_path_factory.mktemp("interactive")), standin, MODELS)[0]


def test_batch_verdicts_equal_the_interactive_runs_at_half_the_price_one_batch_a_round(tmp_path, standin,
                                                                                     interactive):
    project = project_with(tmp_path)
    found, err, requests = live_all(run, project, standin, MODELS, "--batch")
    assert verdicts(found) == verdicts(interactive)
    creates = [r for r in requests if r["kind"] == "batch-create"]
    rounds = [line for line in err.splitlines() if line.startswith("batch batch_")]
    assert len(creates) == len(rounds) == len([r for r in requests if r["kind"] == "file-upload"]) >= 3
    judged = [r for r in requests if r["kind"] == "judge"]
    assert judged and all(r["batch"] for r in judged)  # no judge call outside a batch
    for row in found["rows"]:
        twin = next(r for r in interactive["rows"] if r["id"] == row["id"])
        for stage, verdict in row["judged"].items():
            assert verdict["cost"] == pytest.approx(twin["judged"][stage]["cost"] * batch.BATCH_DISCOUNT)
            assert (verdict["tokens_in"], verdict["tokens_out"]) == \
                (twin["judged"][stage]["tokens_in"], twin["judged"][stage]["tokens_out"])


def test_an_expired_batch_makes_only_its_requests_errors_and_a_rerun_completes(tmp_path, standin):
    project = copy_cases(tmp_path, ("backup", "restore"), "job-expires")  # its contextual recall expires the job
    code, err, _ = run(project, standin, "--live", "--batch", "--quiet", "--split", "all")
    assert code == Exit.INCOMPLETE
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors and all("ended expired" in line for line in errors)
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet", "--split", "all")
    assert code == 0, err
    assert [r for r in requests if r["kind"] == "batch-create"]

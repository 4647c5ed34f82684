"""`--live --batch` with an Anthropic judge: through the Message Batches of the Anthropic stand-in
(whichstage/standins/anthropic.py) with the real anthropic client (whichstage/run/batch_anthropic.py): the same
verdicts and tokens as an interactive run, at half the price, one batch per round, a batch that expires costing
only its own entries, and a killed run that resumes polling its job without paying twice."""
import asyncio
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from conftest import all_report, copy_cases, live_all, evaluate_at, killed_once_submitted, serial_judge, verdicts
from whichstage.run import batch
from whichstage.run.batch_anthropic import AnthropicBatches
from whichstage.providers.settings import HOSTED
from whichstage.standins import anthropic as anthropic_standin
from whichstage.standins.anthropic import Fault

JUDGE = "claude-haiku-4-5"  # in DeepEval's Anthropic price table
MODELS = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": f"anthropic:{JUDGE}"}
CASES = ("backup", "restore", "issue-212", "thanks", "max-tasks")  # an answer, a lookup, small talk, an abstention
KEY_VARIABLE, URL_VARIABLE = HOSTED["anthropic"][:2]


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, anthropic_standin)
        faults = {JUDGE: {"job-expires": Fault("batch-expired", times=1)}}
        with anthropic_standin.serve(models=[JUDGE], faults=faults, batch_polls=1) as server:
            yield server


def settings(standin, poll_s: str = "0") -> dict[str, str]:
    return {**MODELS, KEY_VARIABLE: "test", URL_VARIABLE: standin.url, "DOCS_BATCH_POLL_S": poll_s}


def run(project: Path, standin, *args: str) -> tuple[int, str, list[dict]]:
    """evaluate.main in `project` against the stand-in; its exit code, stderr and the requests it made."""
    return evaluate_at(project, standin, settings(standin), *args)


def batched_requests(requests: list[dict]) -> int:
    """How many judge requests the run's batches carried."""
    return sum(r["requests"] for r in requests if r["kind"] == "batch-create")


@pytest.fixture(scope="module")
def interactive(tmp_path_factory, standin) -> dict:
    return live_all(run, copy_cases(tmp_path_factory.mktemp("interactive"), CASES), standin, MODELS)[0]


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory, standin) -> tuple[dict, str, list[dict]]:
    """A --batch run of CASES: its report, stderr and requests."""
    project = copy_cases(tmp_path_factory.mktemp("batch"), CASES)
    return live_all(run, project, standin, MODELS, "--batch")


def test_batch_verdicts_and_tokens_equal_the_interactive_runs_at_half_the_price(batch_run, interactive):
    found = batch_run[0]
    assert verdicts(found) == verdicts(interactive)
    for row in found["rows"]:
        twin = next(r for r in interactive["rows"] if r["id"] == row["id"])
        for stage, verdict in row["judged"].items():
            assert verdict["cost"] == pytest.approx(twin["judged"][stage]["cost"] * batch.BATCH_DISCOUNT)
            assert verdict["cost"] > 0
            assert (verdict["tokens_in"], verdict["tokens_out"]) == \
                (twin["judged"][stage]["tokens_in"], twin["judged"][stage]["tokens_out"])


def test_the_judge_is_asked_in_one_batch_a_round_and_never_outside_one(batch_run):
    _, err, requests = batch_run
    creates = [r for r in requests if r["kind"] == "batch-create"]
    rounds = [line for line in err.splitlines() if line.startswith("batch msgbatch_")]
    assert len(creates) == len(rounds) >= 3  # truths and claims, then verdicts, then reasons
    judged = [r for r in requests if r["kind"] == "judge"]
    assert len(judged) == batched_requests(requests) and all(r.get("batch") for r in judged)


def test_an_expired_batch_makes_only_its_requests_errors_and_a_rerun_completes(tmp_path, standin):
    project = copy_cases(tmp_path, ("backup", "restore"), "job-expires")  # its contextual recall expires the batch
    code, err, _ = run(project, standin, "--live", "--batch", "--quiet", "--split", "all")
    assert code == Exit.INCOMPLETE
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors and all(line.endswith(" expired") for line in errors)
    assert all_report(project, MODELS)["rows"]  # the other entries were kept
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet", "--split", "all")
    assert code == 0, err
    assert [r for r in requests if r["kind"] == "batch-create"]


def test_a_killed_batch_run_resumes_polling_its_job_and_pays_for_nothing_twice(tmp_path, standin, batch_run):
    project = copy_cases(tmp_path, CASES)
    start = len(standin.requests)
    submitted = killed_once_submitted(project, settings(standin, poll_s="30"), "--live", "--batch", "--quiet",
                                      "--split", "all")  # while it waits to poll the batch it submitted
    killed = standin.requests[start:]
    code, err, requests = run(project, standin, "--live", "--batch", "--quiet", "--split", "all")
    assert code == 0, err
    assert f"batch {submitted[-1]}: polling the job an earlier run submitted" in err
    assert [r for r in requests if r["kind"] == "batch-get" and r.get("batch") == submitted[-1]]
    fresh = batch_run[2]
    assert batched_requests(killed) + batched_requests(requests) == batched_requests(fresh)  # none sent twice
    assert verdicts(all_report(project, MODELS)) == verdicts(batch_run[0])


class Answering:
    """A round keeper that answers every request with `text` (batch.Rounds' ask), for `provider`."""

    def __init__(self, provider, text: str):
        self.provider, self.text = provider, text

    async def ask(self, prompt: str, schema) -> dict:
        return {"text": self.text, "tokens_in": 1, "tokens_out": 1}


def test_a_json_answer_wrapped_in_prose_is_parsed_as_the_interactive_judge_parses_it(monkeypatch):
    from deepeval.metrics.faithfulness.schema import Verdicts

    monkeypatch.setenv(KEY_VARIABLE, "test")
    text = 'The verdicts:\n```json\n{"verdicts": []}\n```'  # a model without structured outputs
    judge = batch.batch_judge(MODELS["DOCS_JUDGE"], Answering(AnthropicBatches(JUDGE), text))
    assert asyncio.run(judge.a_generate("Judge each claim.", schema=Verdicts))[0] == Verdicts(verdicts=[])

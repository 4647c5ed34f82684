"""Anthropic at the protocol level: the real ChatAnthropic and DeepEval AnthropicModel clients (through
providers.py, `anthropic:` names) run `evaluate.py --live` against a stand-in Messages API on 127.0.0.1
(whichstage/standins/anthropic.py, reached through ANTHROPIC_BASE_URL), answering through the offline backends.
No network beyond 127.0.0.1; `evaluate.main` runs in this process.
"""
import io
import json
import os
import socket
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from conftest import SAMPLE, all_report, client_call, comparable, copy_cases, serial_judge, used_tokens
from whichstage.cli import run as evaluate
from whichstage.calls import retries as live_calls
from whichstage.providers import settings as provider_settings, build as providers
from whichstage.run import files as run_files
from whichstage.providers.settings import HOSTED

KEY_VARIABLE, URL_VARIABLE = HOSTED["anthropic"][:2]
from whichstage.calls.retries import CallFailed, with_retries
from whichstage.standins import anthropic as anthropic_standin
from whichstage.standins.anthropic import Fault, serve

HERE = Path(__file__).parents[2]
OFFLINE_ALL = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.all.json").read_text())
MODEL = "claude-haiku-4-5"  # in DeepEval's price table, with structured outputs
UNPRICED = "claude-standin"  # in no price table
NAME = f"anthropic:{MODEL}"
ENV = {"DOCS_MODEL": NAME, "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": NAME}
FAULTS = {MODEL: {"direct-429": Fault("429", times=1, retry_after=7), "direct-500": Fault("500", times=2),
                  "direct-529": Fault("529", times=1), "direct-hang": Fault("hang"),
                  "direct-refusal": Fault("refusal"), "direct-bad-json": Fault("bad-json")}}


@dataclass
class Run:
    project: Path
    code: int
    stderr: str
    requests: list[dict]

    def report(self) -> dict:
        return all_report(self.project, ENV)


def run(project: Path, standin, *args: str, **env) -> Run:
    """`evaluate.main(args)` in `project` with the Anthropic names, ANTHROPIC_API_KEY=test and the stand-in's
    URL (each overridable; None unsets); retries cost no time."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        mp.setattr(live_calls, "sleep", lambda seconds: None)
        for variable in (*run_files.MODEL_VARIABLES.values(), KEY_VARIABLE, URL_VARIABLE):
            mp.delenv(variable, raising=False)
        for variable, value in {**ENV, KEY_VARIABLE: "test", URL_VARIABLE: standin.url, **env}.items():
            if value is not None:
                mp.setenv(variable, value)
        start, err = len(standin.requests), io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = evaluate.main(list(args))
    return Run(project, code, err.getvalue(), standin.requests[start:])


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, anthropic_standin)
        with serve(models=[MODEL, UNPRICED], faults=FAULTS) as server:
            yield server


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, standin) -> Run:
    """`evaluate.py --live --quiet --split all` with Anthropic as agent and judge, the hash embedder, in a copy
    of the project holding conftest.SAMPLE's cases (one of each kind)."""
    project = copy_cases(tmp_path_factory.mktemp("anthropic"), SAMPLE)
    return run(project, standin, "--live", "--quiet", "--split", "all")


@pytest.fixture
def at_standin(standin, monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, "test")
    monkeypatch.setenv(URL_VARIABLE, standin.url)
    monkeypatch.setattr(live_calls, "sleep", lambda seconds: None)
    return standin


# ---- the bundled example, end to end ----------------------------------------------------------------------

def test_anthropic_as_agent_and_judge_reproduces_the_offline_report(full_run):
    assert full_run.code == 0, full_run.stderr
    assert all(r["status"] == 200 for r in full_run.requests)
    report = full_run.report()
    offline = [r for r in OFFLINE_ALL["rows"] if r["id"] in SAMPLE]
    assert len(offline) == len(SAMPLE)
    assert [comparable(r) for r in report["rows"]] == [comparable(r) for r in offline]


def test_the_report_has_the_stand_ins_tokens_and_deepevals_price_for_them(full_run):
    from deepeval.models.llms.constants import ANTHROPIC_MODELS_DATA

    tokens, price = full_run.report()["summary"]["tokens"], ANTHROPIC_MODELS_DATA.get(MODEL)
    usage = lambda answer: (answer["usage"]["input_tokens"], answer["usage"]["output_tokens"])  # noqa: E731
    assert (tokens["agent_in"], tokens["agent_out"]) == used_tokens(full_run.project, "chat", usage)
    assert (tokens["judge_in"], tokens["judge_out"]) == used_tokens(full_run.project, "judge", usage)
    assert tokens["agent_in"] > 0 and tokens["judge_in"] > 0
    assert full_run.report()["summary"]["cost"] == pytest.approx(
        tokens["judge_in"] * price.input_price + tokens["judge_out"] * price.output_price, rel=1e-4)


def test_a_replay_of_the_anthropic_recording_imports_no_anthropic_library(full_run):
    probe = ("import sys; from whichstage.cli import run as evaluate; code = evaluate.main(['--split', 'all']); "
             "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'anthropic', 'langchain_anthropic'}))")
    clean = {k: v for k, v in os.environ.items() if k not in (*ENV, KEY_VARIABLE, URL_VARIABLE)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=full_run.project, capture_output=True, text=True,
                          env={**clean, **ENV}, timeout=300)
    assert f"model {NAME}" in done.stdout, done.stdout + done.stderr  # the Anthropic run's report, replayed
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr


# ---- each client on its own: the harness's retries, a timeout ------------------------------------------------

def judge_call(marker: str):
    return client_call("judge", NAME, marker)


def chat_call(marker: str):
    return client_call("chat", NAME, marker)


def test_a_429_waits_its_retry_after_then_succeeds(at_standin):
    logged, waits = [], []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(live_calls, "sleep", waits.append)
        with_retries("agent/x", chat_call("direct-429"), logged.append)
    assert waits == [7.0] and "(Retry-After)" in logged[0]
    assert at_standin.count(marker="direct-429", status=429) == 1
    assert at_standin.count(marker="direct-429", status=200) == 1


@pytest.mark.parametrize("marker, status", [("direct-500", 500), ("direct-529", 529)])
def test_a_5xx_is_retried_by_the_harness_alone(at_standin, marker, status):
    verdict, cost = with_retries("judge/x", judge_call(marker), lambda line: None)
    assert verdict.truths and cost.input_tokens > 0
    failed = at_standin.count(marker=marker, status=status)
    assert failed == FAULTS[MODEL][marker].times  # one request per harness attempt: the SDK retried nothing
    assert at_standin.count(marker=marker, status=200) == 1


def test_a_model_that_never_answers_times_out_each_attempt(at_standin, monkeypatch):
    monkeypatch.setattr(provider_settings, "CALL_TIMEOUT_S", 0.1)
    before = at_standin.count(marker="direct-hang")
    with pytest.raises(CallFailed, match=f"Timeout.*gave up after {live_calls.MAX_ATTEMPTS} attempts"):
        with_retries("agent/x", chat_call("direct-hang"), lambda line: None)
    assert at_standin.count(marker="direct-hang") - before == live_calls.MAX_ATTEMPTS


@pytest.mark.parametrize("call, marker, cause", [
    (chat_call, "direct-refusal", "BlockedResponse: Anthropic refused to answer (stop_reason refusal)"),
    (judge_call, "direct-refusal", "BlockedResponse: Anthropic refused to answer (stop_reason refusal)"),
    (judge_call, "direct-bad-json", "InvalidJudgeAnswer: the judge's answer is not valid JSON for DeepEval's Truths "
                                    "schema"),
])
def test_an_unusable_answer_is_one_line_after_one_attempt(at_standin, call, marker, cause):
    before = at_standin.count(marker=marker)
    with pytest.raises(CallFailed) as failed:
        with_retries("judge/x", call(marker), lambda line: pytest.fail(f"retried: {line}"))
    assert str(failed.value).startswith(f"judge/x: {cause}") and "\n" not in str(failed.value)
    assert at_standin.count(marker=marker) - before == 1


def test_an_unpriced_judge_counts_its_tokens_and_has_no_price(at_standin):
    _, cost = providers.judge_model(f"anthropic:{UNPRICED}").generate("Say hello.")
    assert cost.value is None and cost.input_tokens > 0 and cost.output_tokens > 0


def test_an_anthropic_embedder_ends_the_run_with_exit_2_before_any_paid_call(project, standin):
    done = run(project, standin, "--live", "--quiet", DOCS_EMBEDDER=NAME)
    assert (done.code, done.stderr) == (Exit.BAD_INPUT, (
        f"evaluate.py: DOCS_EMBEDDER={NAME}: Anthropic has no embeddings API; name another provider's embedder "
        "(openai:text-embedding-3-small, google_genai:gemini-embedding-001, ollama:nomic-embed-text, hash)\n"))
    assert {r["kind"] for r in done.requests} <= {"get"}  # nothing paid


# ---- the preflight: exit 2 before any paid call ---------------------------------------------------------------

def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_exits_2_at_once_naming_anthropic_and_its_url(project, standin):
    url = f"http://127.0.0.1:{closed_port()}"
    done = run(project, standin, "--live", "--quiet", ANTHROPIC_BASE_URL=url)
    assert done.code == Exit.BAD_INPUT
    assert done.stderr == (f"evaluate.py: cannot reach Anthropic at {url} (ANTHROPIC_BASE_URL) for model {MODEL}: "
                           "connection refused\n")


def test_no_key_exits_2_naming_the_variable_and_asks_nothing(project, standin):
    done = run(project, standin, "--live", "--quiet", ANTHROPIC_API_KEY=None)
    assert (done.code, done.stderr) == (Exit.BAD_INPUT,
                                        "evaluate.py: set ANTHROPIC_API_KEY to record with an Anthropic model (anthropic:MODEL)\n")
    assert done.requests == []


def test_an_unknown_model_exits_2_naming_it(project, standin):
    done = run(project, standin, "--live", "--quiet", DOCS_MODEL="anthropic:claude-nope")
    assert done.code == Exit.BAD_INPUT
    assert done.stderr == (f"evaluate.py: Anthropic at {standin.url} (ANTHROPIC_BASE_URL) has no model "
                           "'claude-nope' (HTTP 404: model: claude-nope)\n")


def test_neither_the_anthropic_key_nor_its_base_urls_password_reaches_a_message(monkeypatch):
    from whichstage._util.redact import outside_text

    monkeypatch.setenv(KEY_VARIABLE, "sk-ant-CANARY")
    monkeypatch.setenv(URL_VARIABLE, "http://user:PASS-CANARY@127.0.0.1:1")
    assert outside_text("refused sk-ant-CANARY, and PASS-CANARY") == "refused ***, and ***"


@pytest.mark.parametrize("call", [chat_call, judge_call])
def test_no_request_leaves_once_the_run_is_stopped(at_standin, call):
    from whichstage.calls.stopping import Guard, Stopped, current_guard

    ask, guard = call("direct-stopped"), Guard()
    guard.stop.set()
    token = current_guard.set(guard)
    try:
        with pytest.raises(Stopped):
            ask()
    finally:
        current_guard.reset(token)
    assert at_standin.count(marker="direct-stopped") == 0

"""OpenAI at the protocol level: the real ChatOpenAI, OpenAIEmbeddings and DeepEval OpenAIModel clients (through
providers.py, `openai:` names) run `evaluate.py --live` against a stand-in OpenAI server on 127.0.0.1
(whichstage/standins/openai.py, reached through OPENAI_BASE_URL), answering through the offline backends.

One stand-in serves the module; `evaluate.main` runs in this process, its retries recording their waits instead of
sleeping. The full run records one case of each kind of the bundled example (conftest.SAMPLE), not every case.
"""
import io
import json
import re
import shutil
import socket
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from conftest import SAMPLE, all_report, client_call, comparable, copy_cases, copy_project, serial_judge, used_tokens
from whichstage.cli import run as evaluate
from whichstage.calls import retries as live_calls
from whichstage.providers import settings as provider_settings
from whichstage._util.redact import KEY_VARIABLES
from whichstage.run import files as run_files
from whichstage.calls.retries import CallFailed, with_retries
from whichstage._util.redact import HOSTED_KEY_VARIABLES, URL_VARIABLES
from whichstage.standins import openai as openai_standin
from whichstage.standins.gemini_faults import Fault

HERE = Path(__file__).parents[2]
CHAT, EMBED, SILENT = "gpt-4.1-mini", "text-embedding-3-small", "gpt-4.1-nano"
NAMES = {"DOCS_MODEL": f"openai:{CHAT}", "DOCS_EMBEDDER": f"openai:{EMBED}", "DOCS_JUDGE": f"openai:{CHAT}"}
CLIENTS = {"chat": CHAT, "embed": EMBED, "judge": CHAT}
FAULTS = {CHAT: {"once-429": Fault("429", times=1, retry_after=7), "always-503": Fault("503"),
                 "twice-500 chat": Fault("500", times=2), "twice-500 judge": Fault("500", times=2)},
          EMBED: {"twice-500 embed": Fault("500", times=2), "always-503": Fault("503")}}
PROVIDER_LIBRARIES = {"openai", "anthropic", "langchain_openai", "langchain_anthropic", "tiktoken", "httpx2"}


@dataclass
class Run:
    project: Path
    code: int
    stderr: str
    sleeps: list
    requests: list[dict]

    def report(self) -> dict:
        return all_report(self.project, NAMES)


def run(project: Path, standin, *args: str, **env) -> Run:
    """`evaluate.main(args)` in `project` with OPENAI_API_KEY=test, the stand-in's URL and the `openai:` names
    (each overridable; None unsets); waits recorded instead of slept."""
    sleeps: list[float] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        mp.setattr(live_calls, "sleep", sleeps.append)
        for variable in (*run_files.MODEL_VARIABLES.values(), *KEY_VARIABLES, *HOSTED_KEY_VARIABLES,
                         *URL_VARIABLES):
            mp.delenv(variable, raising=False)
        for variable, value in {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": standin.url, **NAMES, **env}.items():
            if value is not None:
                mp.setenv(variable, value)
        start, err = len(standin.requests), io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = evaluate.main(list(args))
    return Run(project, code, err.getvalue(), sleeps, standin.requests[start:])


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, openai_standin)
        with openai_standin.serve(models=[CHAT, EMBED, SILENT], faults=FAULTS, reject_keys=["rejected-key"],
                                  silent=[SILENT]) as server:
            yield server


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, standin) -> tuple[Run, dict]:
    """`evaluate.py --live --quiet --split all` with `openai:` agent, embedder and judge in a copy of the
    project holding one case of each kind (conftest.SAMPLE), and the offline report of those cases replayed
    there from the bundled recording before it."""
    project = copy_cases(tmp_path_factory.mktemp("openai"), SAMPLE)
    replayed = run(project, standin, "--split", "all", DOCS_MODEL="rules", DOCS_EMBEDDER="hash", DOCS_JUDGE="lexical")
    assert replayed.code == 0 and replayed.requests == [], replayed.stderr
    offline = next(json.loads(p.read_text()) for p in (project / "runs").glob("*.all.json")
                   if json.loads(p.read_text())["key"]["embedder"] == "hash")
    assert sorted(r["id"] for r in offline["rows"]) == sorted(SAMPLE)
    return run(project, standin, "--live", "--quiet", "--split", "all"), offline


def test_openai_as_agent_embedder_and_judge_reproduces_the_offline_report(full_run):
    done, offline = full_run
    assert done.code == 0, done.stderr
    assert done.stderr.startswith("recorded ") and len(done.stderr.splitlines()) == 1, done.stderr
    report = done.report()
    assert {k: report["key"][k] for k in ("model", "embedder", "judge")} == \
        {"model": NAMES["DOCS_MODEL"], "embedder": NAMES["DOCS_EMBEDDER"], "judge": NAMES["DOCS_JUDGE"]}
    # The same rules through OpenAI's REST API and the three real clients: the same answers, tool calls,
    # retrieved pages, scores, reasons and token counts.
    assert [comparable(r) for r in report["rows"]] == [comparable(r) for r in offline["rows"]]
    assert {r["kind"] for r in done.requests} == {"get", "chat", "judge", "embed"}
    assert all(r["status"] == 200 for r in done.requests)


def test_the_report_has_openais_usage_and_the_judges_cost_from_deepevals_price_table(full_run):
    from deepeval.models.llms.constants import OPENAI_MODELS_DATA

    done, _ = full_run
    report = done.report()
    tokens = report["summary"]["tokens"]
    usage = lambda answer: (answer["usage"]["prompt_tokens"], answer["usage"]["completion_tokens"])  # noqa: E731
    assert (tokens["agent_in"], tokens["agent_out"]) == used_tokens(done.project, "chat", usage)
    assert (tokens["judge_in"], tokens["judge_out"]) == used_tokens(done.project, "judge", usage)
    assert tokens["agent_in"] > 0 and tokens["judge_in"] > 0
    price = OPENAI_MODELS_DATA.get(CHAT)
    assert report["summary"]["cost"] == pytest.approx(
        tokens["judge_in"] * price.input_price + tokens["judge_out"] * price.output_price, rel=1e-4)
    assert report["summary"]["cost"] > 0


def test_a_rerun_of_stale_entries_is_served_every_unchanged_request_through_the_sdks_own_http(full_run, standin,
                                                                                             tmp_path):
    """The openai SDK sends through httpx2, not httpx: the reusing transport is its module's, so a comment in
    the agent's code (every trace stale, no request changed) pays for nothing."""
    done, _ = full_run
    project = shutil.copytree(done.project, tmp_path / "copy")
    with (project / "assistant.py").open("a") as f:
        f.write("\n# a comment: the agent's code changed, none of its requests\n")
    again = run(project, standin, "--live", "--quiet", "--split", "all")
    assert again.code == 0, again.stderr
    assert [r for r in again.requests if r["kind"] != "get"] == []  # the preflight's model lookups alone
    assert re.search(r"requests: 0 .*paid, [1-9]\d* .*served", again.stderr), again.stderr


def test_a_replay_of_the_openai_recording_imports_no_provider_library(full_run):
    done, _ = full_run
    probe = ("import sys; from whichstage.cli import run as evaluate; code = evaluate.main(['--split', 'all']); "
             "print(code, sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:])))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in (*NAMES, "OPENAI_API_KEY")}
    replayed = subprocess.run([sys.executable, "-c", probe, *sorted(PROVIDER_LIBRARIES)], cwd=done.project,
                              capture_output=True, text=True, timeout=300,
                              env={**env, "DOCS_MODEL": NAMES["DOCS_MODEL"], "DOCS_EMBEDDER": NAMES["DOCS_EMBEDDER"],
                                   "DOCS_JUDGE": NAMES["DOCS_JUDGE"]})
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.strip().splitlines()[-1] == "0 []"


# ---- each client on its own: one request per harness attempt, retries the harness's --------------------------

def direct_call(client: str, marker: str, model: str = ""):
    """One call of one real client at the stand-in, as the harness makes it."""
    return client_call(client, f"openai:{model or CLIENTS[client]}", marker)


@pytest.fixture
def at_standin(standin, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", standin.url)
    waits: list[float] = []
    monkeypatch.setattr(live_calls, "sleep", waits.append)
    standin.waits = waits
    return standin


def test_a_429_waits_its_retry_after_then_succeeds(at_standin):
    logged: list[str] = []
    with_retries("agent/x", direct_call("chat", "once-429"), logged.append)
    assert at_standin.count(marker="once-429", status=429) == 1 and at_standin.count(marker="once-429", status=200) == 1
    assert at_standin.waits == [7.0]
    assert logged == ["retry 1/4 for agent/x in 7.0s (Retry-After): OpenAIRateLimitError: Error code: 429 - Rate "
                      "limit reached for requests."]


@pytest.mark.parametrize("client", ["chat", "embed", "judge"])
def test_a_5xx_is_retried_by_the_harness_alone_then_succeeds(at_standin, client):
    marker = f"twice-500 {client}"
    with_retries(f"{client}/x", direct_call(client, marker), lambda line: None)
    assert at_standin.count(marker=marker, status=500) == 2  # one request per attempt: the SDK retried nothing
    assert at_standin.count(marker=marker, status=200) == 1


@pytest.mark.parametrize("client", ["chat", "embed", "judge"])
def test_a_5xx_that_persists_reaches_the_server_exactly_max_attempts_times(at_standin, client):
    model, before = CLIENTS[client], at_standin.count(marker="always-503", model=CLIENTS[client])
    with pytest.raises(CallFailed, match=f"gave up after {live_calls.MAX_ATTEMPTS} attempts"):
        with_retries(f"{client}/x", direct_call(client, "always-503"), lambda line: None)
    assert at_standin.count(marker="always-503", model=model) - before == live_calls.MAX_ATTEMPTS


@pytest.mark.parametrize("client", ["chat", "judge"])
def test_a_model_that_never_answers_times_out_each_attempt(at_standin, client, monkeypatch):
    monkeypatch.setattr(provider_settings, "CALL_TIMEOUT_S", 0.2)
    before = at_standin.count(kind="silent")
    with pytest.raises(CallFailed, match=f"Timeout.*gave up after {live_calls.MAX_ATTEMPTS} attempts"):
        with_retries(f"{client}/x", direct_call(client, "anything", SILENT), lambda line: None)
    assert at_standin.count(kind="silent") - before == live_calls.MAX_ATTEMPTS


# ---- the preflight: one line, at once, before any paid call -------------------------------------------------

def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def refusing(tmp_path_factory) -> Path:
    return copy_project(tmp_path_factory.mktemp("refused"))


def assert_refused(done: Run, line: str) -> None:
    assert done.code == Exit.BAD_INPUT
    assert done.stderr.splitlines() == [line], done.stderr
    assert {p.name for p in (done.project / "recordings").iterdir()} == \
        {p.name for p in (HERE / "recordings").glob("*.json")}  # nothing written
    assert all(r["kind"] in ("get", "rejected-key", "unknown-model") for r in done.requests)  # nothing paid


def test_a_closed_port_exits_2_naming_openai_the_url_and_its_variable(refusing, standin):
    port = closed_port()
    done = run(refusing, standin, "--live", "--quiet", OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    assert_refused(done, f"evaluate.py: cannot reach OpenAI at http://127.0.0.1:{port}/v1 (OPENAI_BASE_URL) for "
                         f"model {CHAT}: connection refused")


def test_no_key_names_the_variable_and_asks_nothing(refusing, standin):
    done = run(refusing, standin, "--live", "--quiet", OPENAI_API_KEY=None)
    assert_refused(done, "evaluate.py: set OPENAI_API_KEY to record with an OpenAI model (openai:MODEL)")
    assert done.requests == []


def test_a_rejected_key_is_named_by_its_variable(refusing, standin):
    done = run(refusing, standin, "--live", "--quiet", OPENAI_API_KEY="rejected-key")
    assert_refused(done, f"evaluate.py: OpenAI at {standin.url} (OPENAI_BASE_URL) rejected the API key in "
                         f"OPENAI_API_KEY for model {CHAT} (HTTP 401: Incorrect API key provided.)")


def test_an_unknown_model_is_named_with_the_servers_words(refusing, standin):
    done = run(refusing, standin, "--live", "--quiet", DOCS_JUDGE="openai:gpt-nope")
    assert_refused(done, f"evaluate.py: OpenAI at {standin.url} (OPENAI_BASE_URL) has no model 'gpt-nope' (HTTP "
                         "404: The model `gpt-nope` does not exist or you do not have access to it.)")


@pytest.mark.parametrize("name, table", [("openai:gpt-4.1-mini", "OPENAI_MODELS_DATA"),
                                         ("anthropic:claude-sonnet-4-5", "ANTHROPIC_MODELS_DATA"),
                                         ("google_genai:gemini-2.5-flash", "GEMINI_MODELS_DATA")])
def test_the_plan_prices_a_provider_qualified_model_from_its_providers_table(name, table):
    from deepeval.models.llms import constants

    from whichstage.run import plan

    data = getattr(constants, table).get(name.partition(":")[2])
    assert plan.price(name) == (data.input_price, data.output_price) and data.input_price > 0


def test_no_key_password_or_query_of_the_openai_settings_reaches_the_line(refusing, standin):
    port = closed_port()
    done = run(refusing, standin, "--live", "--quiet", OPENAI_API_KEY="CANARY-KEY-1234",
               OPENAI_BASE_URL=f"http://user:CANARY-PASS@127.0.0.1:{port}/v1?api_key=CANARY-QUERY")
    assert done.code == Exit.BAD_INPUT and "CANARY" not in done.stderr, done.stderr
    assert done.stderr == (f"evaluate.py: cannot reach OpenAI at http://127.0.0.1:{port}/v1 (OPENAI_BASE_URL) for "
                           f"model {CHAT}: connection refused\n")


@pytest.mark.parametrize("variable, value, secret", [
    ("OPENAI_API_KEY", "CANARY-KEY-1234", "CANARY-KEY-1234"), ("ANTHROPIC_API_KEY", "CANARY-KEY-5678", "CANARY-KEY-5678"),
    ("MISTRAL_API_KEY", "CANARY-KEY-9012", "CANARY-KEY-9012"),  # any LangChain provider's *_API_KEY
    ("OPENAI_BASE_URL", "http://user:CANARY-PASS@127.0.0.1:9/v1", "CANARY-PASS"),
    ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/?token=CANARY-QUERY", "CANARY-QUERY")])
def test_a_servers_text_echoing_a_providers_secret_is_scrubbed(monkeypatch, variable, value, secret):
    from whichstage._util.redact import outside_text

    monkeypatch.setenv(variable, value)
    assert outside_text(f"refused: {secret} was given") == "refused: *** was given"

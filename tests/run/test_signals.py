"""Stopping a live run, and a provider that never answers. After Ctrl-C or SIGTERM no request (a retry
included) is sent and the run ends within seconds, keeping what it paid for; a provider that never answers
ends the run by itself. The real clients (Gemini's and Ollama's: chat, embeddings, DeepEval's judge) run
against a stand-in on 127.0.0.1 whose chosen models read each request and never answer it, with
`evaluate.main` in this process (a SIGTERM sent to it too). Every wait here is on an event (a
request arriving, the run ending); the bounds are hang guards."""
import json
import os
import re
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from whichstage._util.exits import Exit
from whichstage.cli import run as evaluate
from whichstage.calls import retries as live_calls
from whichstage.providers import build as providers
from whichstage.providers.settings import GEMINI_URL_VARIABLE, TIMEOUT_VARIABLE
from whichstage.calls import pool as pool_module
from whichstage.calls.errors import is_transient
from whichstage.calls.pool import Pool
from whichstage.calls.stopping import SILENT_LIMIT, Stopped
from whichstage.standins import gemini as gemini_standin
from whichstage.standins import ollama as ollama_standin
from conftest import SAMPLE, copy_cases, serial_judge

MODELS = {"gemini": {"chat": "gemini-standin-chat", "embed": "gemini-standin-embed", "judge": "gemini-standin-judge"},
          "ollama": {"chat": "standin-chat", "embed": "standin-embed", "judge": "standin-judge"}}
VARIABLES = {"chat": "DOCS_MODEL", "embed": "DOCS_EMBEDDER", "judge": "DOCS_JUDGE"}
HANG_GUARD_S = 240  # only against a hang: a run that works ends long before, on any machine


class Requests:
    """The model requests (POSTs) a stand-in received, counted as they arrive; those of the `silent` models
    are read and held unanswered until the stand-in stops."""

    def __init__(self, silent: set[str]):
        self.silent, self.arrived, self.held = silent, 0, 0
        self.lock, self.first_held, self.released = threading.Lock(), threading.Event(), threading.Event()

    def count(self) -> int:
        with self.lock:
            return self.arrived

    def take(self, model: str) -> bool:
        """Count a request; True when it is to be held (then it returns only once the stand-in stops)."""
        with self.lock:
            self.arrived += 1
            if model not in self.silent:
                return False
            self.held += 1
        self.first_held.set()
        self.released.wait()
        return True


def counting(do_post):
    """A stand-in handler's do_POST that counts every request and holds those of silent models."""
    def do_POST(self):
        body = self.body()
        found = re.search(r"/models/([^/:]+):", self.path)  # Gemini names the model in the path, Ollama in the body
        model = found.group(1) if found else json.loads(body or b"{}").get("model", "")
        if self.server.standin.counted.take(model):
            self.close_connection = True
            return
        do_post(self)
    return do_POST


@contextmanager
def provider(name: str, silent: tuple[str, ...], monkeypatch) -> Iterator[tuple[Requests, dict]]:
    """A stand-in Gemini or Ollama server whose `silent` clients (chat, embed, judge) never get an answer, and
    the environment that points `evaluate.py --live` at it."""
    module = gemini_standin if name == "gemini" else ollama_standin
    monkeypatch.setattr(module.Handler, "do_POST", counting(module.Handler.do_POST))
    requests = Requests({MODELS[name][client] for client in silent})
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DOCS_", "OLLAMA_", "GOOGLE_", "GEMINI_"))}
    env.update({VARIABLES[client]: model for client, model in MODELS[name].items()},
               NO_PROXY="127.0.0.1,localhost", DEEPEVAL_TELEMETRY_OPT_OUT="1")
    with module.serve() as standin:
        standin.counted = requests
        env.update({"GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url} if name == "gemini"
                   else {"OLLAMA_HOST": standin.url})
        try:
            yield requests, env
        finally:
            requests.released.set()


def journaled(project) -> int:
    """The entries of the run's journal (recordings/.NAME.partial.jsonl: a header line, then one per entry, and
    one per request answered)."""
    journals = list((project / "recordings").glob(".*.partial.jsonl"))
    assert len(journals) == 1, journals
    return sum('"entry": ' in line for line in journals[0].read_text().splitlines()[1:])


@pytest.mark.parametrize("name", ["gemini", "ollama"])
def test_sigterm_sends_no_request_after_it_and_keeps_what_was_paid_for(in_this_process, monkeypatch, capsys, name):
    # The judge never answers: the first case's trace is paid for, then its first judge call waits; one call at
    # a time, so no other is on its way when the signal is sent (to this process, whose run takes it as a
    # child's would). Once it is sent, the stand-in drops that request's connection unanswered, where a retry
    # would follow (the call's timeout, 4 s, only in case it does not).
    with provider(name, ("judge",), monkeypatch) as (requests, env):
        in_this_process({**env, TIMEOUT_VARIABLE: "4"})
        monkeypatch.setattr(live_calls, "sleep", live_calls.pause)  # a retry waits, as in a real run
        sent = []

        def terminate_once_held():
            if requests.first_held.wait(HANG_GUARD_S):
                terminated = signal.getsignal(signal.SIGTERM).__self__  # the run's SigtermAsInterrupt
                sent.append(requests.count())
                os.kill(os.getpid(), signal.SIGTERM)
                deadline = time.monotonic() + HANG_GUARD_S
                while not terminated and time.monotonic() < deadline:  # the run has taken the signal
                    time.sleep(0.01)
            requests.released.set()
        threading.Thread(target=terminate_once_held, daemon=True).start()
        code = evaluate.main(["--live", "--quiet", "--concurrency", "1"])
        err = capsys.readouterr().err
        assert sent, f"no judge request in {HANG_GUARD_S} s: {err}"
        assert requests.count() == sent[0], err  # nothing sent after the signal, a retry included
    assert code == Exit.TERMINATED and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("evaluate.py: terminated: ") and last.endswith("; run --live again to finish"), err
    said = int(last.split("terminated: ")[1].split()[0])
    assert said == journaled(Path.cwd()) > 0  # what it paid for is kept, and said


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """conftest's copy of the project (which live_project runs in), with conftest.SAMPLE's cases alone: one of
    each kind, calls enough of each kind (chat, embed, judge) for a silent provider to reach SILENT_LIMIT."""
    return copy_cases(tmp_path, SAMPLE)


@pytest.fixture
def in_this_process(live_project, shared_ssl_contexts, monkeypatch):
    """evaluate.py in this process, in a copy of the project (`project`), its retries costing no time, and the
    stand-ins judging one request at a time (conftest.serial_judge); `use(env)` gives it a provider()'s
    environment."""
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        serial_judge(mp, ollama_standin)

        def use(env: dict) -> None:
            for variable in list(os.environ):
                if variable not in env:
                    monkeypatch.delenv(variable)
            for variable, value in env.items():
                monkeypatch.setenv(variable, value)
        yield use


@pytest.mark.parametrize("silent", ["chat", "embed", "judge"])
@pytest.mark.parametrize("name", ["gemini", "ollama"])
def test_a_provider_that_never_answers_ends_the_run_by_itself(in_this_process, monkeypatch, capsys, name, silent):
    # The embedder's silent attempts are waited one after another (the pages' index is built once), so they get
    # a shorter timeout: an answer on loopback beats it, and one that came later would only count as silent too,
    # where every check below still holds (the silent embedder is asked either way, by the ladder).
    timeout = "0.25" if silent == "embed" else "1"
    with provider(name, (silent,), monkeypatch) as (requests, env):
        in_this_process({**env, TIMEOUT_VARIABLE: timeout})
        code = evaluate.main(["--live", "--quiet"])
    err = capsys.readouterr().err
    assert code == Exit.INCOMPLETE, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("evaluate.py: incomplete: "), err
    assert "attempts in a row got no answer" in err
    assert "/keyword:" not in err  # a ranking that asks no provider is never refused
    # Each kind of call that reaches the silent model (the embedder serves agent runs and the ladder) stops
    # after SILENT_LIMIT calls without an answer, and the calls already running end at their timeout.
    kinds, per_call = 2, live_calls.MAX_ATTEMPTS
    assert 0 < requests.held <= kinds * (SILENT_LIMIT + pool_module.DEFAULT_CONCURRENCY) * per_call


@pytest.mark.parametrize("client", ["chat", "embed", "judge"])
@pytest.mark.parametrize("name", ["gemini", "ollama"])
def test_no_client_sends_a_request_once_its_run_is_stopped(monkeypatch, name, client):
    """A call already running when the run stops (an agent between two model calls, a metric between two
    judge questions) sends nothing more: its client refuses the request."""
    with provider(name, (), monkeypatch) as (requests, env):
        for variable, value in env.items():
            monkeypatch.setenv(variable, value)
        model = MODELS[name][client]
        make = {"chat": providers.chat_model, "embed": providers.embedder, "judge": providers.judge_model}[client]
        built, outcome = make(model), []

        def running_call(pool: Pool):
            while not pool.stopped:  # the run has stopped once its pool says so
                time.sleep(0.01)
            try:
                ask(built, client)
                outcome.append("sent")
            except Stopped:
                outcome.append("refused")

        interrupted_beside(running_call)
        assert outcome == ["refused"] and requests.count() == 0


def interrupted_beside(task) -> None:
    """Run `task(pool)` in a pool beside a task that raises Ctrl-C, which stops the pool and surfaces from it."""
    pool = Pool(2)

    def interrupted():
        raise KeyboardInterrupt

    pool.submit(lambda: task(pool))
    pool.submit(interrupted)
    with pytest.raises(KeyboardInterrupt):
        pool.run()


def ask(model, client: str) -> None:
    """One request of a client, as the harness makes it."""
    if client == "chat":
        model.invoke("Where does tracker keep its data?")
    elif client == "embed":
        model.embed_query("Where does tracker keep its data?")
    else:
        from deepeval.metrics.faithfulness.schema import Truths

        model.generate("List the truths.\n\nText:\nTracker keeps its data in a folder.\n\nJSON:\n", schema=Truths)


def test_a_bad_call_timeout_is_refused_before_any_call(live_project, monkeypatch, capsys):
    monkeypatch.setenv(TIMEOUT_VARIABLE, "soon")
    assert evaluate.main(["--live", "--quiet"]) == Exit.BAD_INPUT
    assert capsys.readouterr().err == (f"evaluate.py: {TIMEOUT_VARIABLE} must be a number of seconds above "
                                       f"0 and at most 3600, not soon\n")


def test_an_answer_after_the_run_stopped_waiting_is_dropped_not_kept(monkeypatch):
    """A call still running once the grace after a stop is over is left behind: should its answer come, it is
    not handed on (so not journaled), as the run has already said what it kept."""
    monkeypatch.setattr(pool_module, "STOP_GRACE_S", 0.1)
    outcome, done = [], threading.Event()

    def left_behind(pool: Pool):
        def slow_call():
            pool.guard.late.wait(HANG_GUARD_S)  # answers only once the run has stopped waiting for it
            return "answer"
        try:
            outcome.append(live_calls.with_retries("agent/x", slow_call, lambda line: None))
        except Stopped:
            outcome.append("dropped")
        finally:
            done.set()

    interrupted_beside(left_behind)
    assert done.wait(HANG_GUARD_S) and outcome == ["dropped"]


@pytest.mark.parametrize("dropped", ["RemoteProtocolError", "ReadError", "WriteError"])
def test_a_connection_dropped_without_an_answer_is_retried(dropped):
    import httpx

    request = httpx.Request("POST", "http://127.0.0.1:9/v1")
    error = getattr(httpx, dropped)("Server disconnected without sending a response.", request=request)
    assert is_transient(RuntimeError("the client's wrapper")) is False
    try:
        raise RuntimeError("the client's wrapper") from error
    except RuntimeError as wrapped:
        assert is_transient(wrapped)

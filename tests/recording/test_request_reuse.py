"""Request-level reuse (issue 23 §2), counted at the Gemini stand-in: the real clients, through `evaluate.py --live`
in this process, on five of the bundled example's cases. After each edit of the issue's table, a live run pays at
most 1.1x the minimum: the request bodies a full re-record of the edited project sends that the base recording
never sent. A fresh run sends no body twice; --repeats runs are paid apart; an interrupted run's answers are not
paid again; the requests of dropped entries leave the recording, and a replay does not parse them."""
import io
import json
from collections import Counter
import os
import shutil
import re
import signal
import threading
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Iterator

import pytest

from whichstage._util.exits import Exit
from conftest import copy_project, serial_judge
from whichstage.cli import run as evaluate
from whichstage.calls import retries as live_calls, stopping
from whichstage._util.redact import KEY_VARIABLES
from whichstage.providers.settings import GEMINI_URL_VARIABLE
from whichstage.run import files as run_files
from whichstage.standins import gemini as gemini_standin

CASES = ["backup", "two-laptops", "issue-212", "thanks", "shell-alias"]
STANDIN = {"DOCS_MODEL": "gemini-standin-chat", "DOCS_EMBEDDER": "gemini-standin-embed",
           "DOCS_JUDGE": "gemini-standin-judge"}
RUN = "docs-assistant+" + "+".join(STANDIN.values())
HANG_GUARD_S = 120


def edit_json(name: str, change):
    def edit(project: Path) -> None:
        path = project / name
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data, indent=1))
    return edit


def edit_text(name: str, old: str, new: str):
    def edit(project: Path) -> None:
        path = project / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
    return edit


def page(pid: str):
    return edit_json("docs.json", lambda pages: next(p for p in pages if p["id"] == pid).update(
        text=next(p for p in pages if p["id"] == pid)["text"] + " Really."))


def case_field(cid: str, field: str):
    return edit_json("cases.json", lambda cases: next(c for c in cases["cases"] if c["id"] == cid).update(
        {field: next(c for c in cases["cases"] if c["id"] == cid)[field] + " (edited)"}))


EDITS = {  # the issue's table: storage is retrieved by one of the cases here, install by none
    "a page few cases retrieve": page("storage"),
    "a page no case retrieves": page("install"),
    "a comment in assistant.py": edit_text("assistant.py", "K = 3\n", "K = 3  # the search's k\n"),
    "the system prompt": edit_text("assistant.py", "in at most three sentences", "in three sentences or fewer"),
    "a question": case_field("two-laptops", "question"),
    "a reference": case_field("backup", "reference"),
    "one issue record": edit_json("issues.json", lambda issues: issues["212"].update(title="sync hangs on a stale lock")),
}


@contextmanager
def logging_standin() -> Iterator:
    """The stand-in, logging the body of every POST it is sent (its `bodies`); `on_post(path, body)`, when set,
    runs before it answers."""
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        handler, bodies = gemini_standin.Handler, []
        real = handler.do_POST

        def do_POST(self):
            data = self.body()
            bodies.append(data)
            if self.server.standin.on_post is not None:
                self.server.standin.on_post(self.path, data)
            real(self)

        mp.setattr(handler, "do_POST", do_POST)
        with gemini_standin.serve(models=list(STANDIN.values())) as server:
            server.bodies, server.on_post = bodies, None
            yield server


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with logging_standin() as server:
        yield server


def run(project: Path, standin, *args: str) -> tuple[int, str, list[bytes]]:
    """`evaluate.py ARGS` in `project` with the stand-in's models: exit code, stderr and the bodies sent."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        mp.setattr(live_calls, "sleep", lambda s: None)
        for variable in (*run_files.MODEL_VARIABLES.values(), *KEY_VARIABLES, GEMINI_URL_VARIABLE):
            mp.delenv(variable, raising=False)
        for variable, value in {"GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url, **STANDIN}.items():
            mp.setenv(variable, value)
        start, err = len(standin.bodies), io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = evaluate.main(["--quiet", "--split", "all", "--concurrency", "1", *args])
    return code, err.getvalue(), standin.bodies[start:]


def some_cases(into: Path, cases: list[str] = CASES) -> Path:
    project = copy_project(into)
    data = json.loads((project / "cases.json").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] in cases]
    (project / "cases.json").write_text(json.dumps(data, indent=1))
    return project


def copied(source: Path, into: Path) -> Path:
    shutil.copytree(source, into, ignore=shutil.ignore_patterns(".*.lock", "history"))
    return into


@pytest.fixture(scope="module")
def base(tmp_path_factory, standin) -> tuple[Path, list[bytes]]:
    """The five cases recorded afresh through the stand-in, and every body that run sent."""
    project = some_cases(tmp_path_factory.mktemp("base"))
    code, err, sent = run(project, standin, "--live")
    assert code == 0, err
    return project, sent


def recorded_requests(project: Path) -> dict:
    return json.loads((project / "recordings" / f"{RUN}.json").read_text()).get("requests", {})


@pytest.mark.parametrize("edit", list(EDITS))
def test_after_each_edit_a_live_run_pays_at_most_a_tenth_more_than_the_requests_never_sent(
        base, standin, tmp_path, edit):
    project = copied(base[0], tmp_path / "edited")
    EDITS[edit](project)
    code, err, paid = run(project, standin, "--live")
    assert code == 0, err
    everything = copied(project, tmp_path / "rerecorded")
    code, err, full = run(everything, standin, "--live", "--rerecord")
    assert code == 0, err
    # counted with repeats: a verdict in doubt is judged again with the very body of its first request, on purpose
    minimum = sum((Counter(full) - Counter(base[1])).values())
    print(f"{edit}: paid {len(paid)}, minimum {minimum}, full {len(full)}")
    assert len(paid) <= 1.1 * minimum, (edit, len(paid), minimum)


def test_a_fresh_run_sends_no_request_body_twice(base):
    sent = base[1]
    assert sent and len(set(sent)) == len(sent)


def test_two_fresh_runs_write_the_same_requests(base, standin, tmp_path):
    again = some_cases(tmp_path)
    code, err, _ = run(again, standin, "--live")
    assert code == 0, err
    section = [(p / "recordings" / f"{RUN}.json").read_text().partition('}, "requests": {')[2] for p in (base[0], again)]
    assert section[0] and section[0] == section[1]


def test_each_repeat_pays_for_its_own_requests(standin, tmp_path):
    project = some_cases(tmp_path, ["thanks"])
    code, err, once = run(project, standin, "--live", "--case", "thanks")
    assert code == 0, err
    again = some_cases(tmp_path / "repeats", ["thanks"])
    code, err, twice = run(again, standin, "--live", "--repeats", "2")
    assert code == 0, err
    calls = [body for body in once if not body.startswith(b'{"requests"')]  # the pages' index: once a process
    assert calls and sorted(b for b in twice if b in calls) == sorted(calls * 2)


def test_an_interrupted_run_keeps_what_it_paid_for_and_the_next_does_not_pay_it_again(standin, tmp_path, monkeypatch):
    """SIGTERM lands while the first agent's first chat turn is answered; that answer is held until the run has
    stopped, so the agent's run is not completed, only its first request paid for."""
    project = some_cases(tmp_path, ["backup"])
    guards = []
    real_init = stopping.Guard.__init__

    def kept(self):
        real_init(self)
        guards.append(self)

    monkeypatch.setattr(stopping.Guard, "__init__", kept)

    def on_post(path: str, body: bytes) -> None:
        chat = ":generateContent" in path and b"responseSchema" not in body and b"functionResponse" not in body
        if chat and not guards[-1].stop.is_set():
            os.kill(os.getpid(), signal.SIGTERM)
            assert guards[-1].stop.wait(HANG_GUARD_S)

    standin.on_post = on_post
    try:
        code, err, first = run(project, standin, "--live")
    finally:
        standin.on_post = None
    assert code == Exit.TERMINATED, err
    assert first
    code, err, second = run(project, standin, "--live")
    assert code == 0, err
    assert not set(first) & set(second)


def test_requests_of_dropped_entries_leave_the_recording(base, standin, tmp_path):
    project = copied(base[0], tmp_path / "fewer")
    before = recorded_requests(project)
    assert any(e.split("/")[1] == "thanks" for r in before.values() for e in r["entries"])
    edit_json("cases.json", lambda cases: cases.update(cases=[c for c in cases["cases"] if c["id"] != "thanks"]))(
        project)
    code, err, sent = run(project, standin, "--live")
    assert code == 0 and sent == [], err
    after = recorded_requests(project)
    assert after and not any(e.split("/")[1] == "thanks" for r in after.values() for e in r["entries"])
    assert set(after) == {k for k, r in before.items() if any(e.split("/")[1] != "thanks" for e in r["entries"])}


def test_a_replay_does_not_parse_the_recorded_requests(base, standin, tmp_path):
    project = copied(base[0], tmp_path / "replayed")
    path = project / "recordings" / f"{RUN}.json"
    text = path.read_text()
    head, section, requests = text.partition('}, "requests": {\n')
    assert section
    path.write_text(head + section + "".join('  "x": not JSON at all\n' for _ in requests.splitlines()[:-1]) + "}}\n")
    code, err, sent = run(project, standin)
    assert code == 0 and sent == [], err


def test_the_plan_bounds_the_requests_a_live_run_pays_for_by_kind(base, standin, tmp_path):
    project = copied(base[0], tmp_path / "planned")
    EDITS["a question"](project)
    out = plan_text(project, standin)
    line = next(line for line in out.splitlines() if line.startswith("requests: at most "))
    bound = sum(int(n) for n in re.findall(r"(?:chat|embedding|judge) (\d+)", line.split(" (what")[0]))
    code, err, paid = run(project, standin, "--live")
    assert code == 0, err
    assert 0 < len(paid) <= bound


def test_the_plan_says_how_many_recorded_requests_another_client_version_sent(base, standin, tmp_path):
    from importlib import metadata

    project = copied(base[0], tmp_path / "upgraded")
    path = project / "recordings" / f"{RUN}.json"
    now = metadata.version("google-genai")
    text = path.read_text()
    path.write_text(text.replace(f"google-genai-sdk/{now}", "google-genai-sdk/0.1.0"))  # as an older client sent them
    EDITS["a reference"](project)
    out = plan_text(project, standin)
    older = len(recorded_requests(project))
    assert f"  {older} recorded requests were sent by other client versions (google-genai-sdk 0.1.0, now {now})" in out


def plan_text(project: Path, standin) -> str:
    """`--live --plan`'s stdout (it sends nothing)."""
    start = len(standin.bodies)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        for variable in (*run_files.MODEL_VARIABLES.values(), *KEY_VARIABLES, GEMINI_URL_VARIABLE):
            mp.delenv(variable, raising=False)
        for variable, value in {"GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url, **STANDIN}.items():
            mp.setenv(variable, value)
        out = io.StringIO()
        with redirect_stderr(io.StringIO()), redirect_stdout(out):
            code = evaluate.main(["--live", "--plan"])
    assert code == 0 and len(standin.bodies) == start
    return out.getvalue()


def test_a_request_asked_twice_at_once_is_sent_once_and_both_get_its_answer():
    from whichstage.recording.requests import Requests

    lines, sends, both_asked = [], [], threading.Barrier(2)
    requests = Requests({}, {}, True, lines.append)
    release = threading.Event()

    def send():
        sends.append(1)
        release.wait(HANG_GUARD_S)
        return "response", {"kind": "chat", "client": "", "status": 200, "type": "application/json", "json": {"a": 1}}

    got = []

    def ask(entry):
        both_asked.wait(HANG_GUARD_S)
        got.append(requests.take("k", entry, "chat", send, lambda: None))

    threads = [threading.Thread(target=ask, args=(e,)) for e in ("agent/a", "agent/b")]
    for t in threads:
        t.start()
    while not (sends and requests.flights.get("k")):
        threading.Event().wait(0.01)
    release.set()
    for t in threads:
        t.join(HANG_GUARD_S)
    assert len(sends) == 1 and sorted(r is None for r, _ in got) == [False, True]
    assert requests.to_write({"agent/a", "agent/b"})["k"]["entries"] == ["agent/a", "agent/b"]


@pytest.mark.parametrize("entry, run", [("agent/backup", ""), ("agent/backup@expected-pages", ""),
                                        ("agent/backup#2", "#2"), ("judge/backup#3/faithfulness", "#3"),
                                        ("ladder/backup/vector", ""), ("abstain-fabricated/0", ""),
                                        ("abstain-fabricated/2", "#3"), ("judge/backup/facts#again", "#again"),
                                        ("judge/backup#2/facts#again", "#2#again")])
def test_requests_are_keyed_apart_by_the_run_an_entry_repeats(entry, run):
    from whichstage.recording.requests import repeat_of

    assert repeat_of(entry) == run

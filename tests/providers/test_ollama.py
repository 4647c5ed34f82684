"""Ollama at the protocol level: the real ChatOllama, OllamaEmbeddings and DeepEval OllamaModel clients run a
`--live` evaluation against a stand-in Ollama server on 127.0.0.1 (ollama_standin.py), and a missing or failing
server reaches the user as clear lines. No network beyond 127.0.0.1.

One stand-in serves the module, each test setting the models it has and the failures it shows (`serving`);
`evaluate.main` runs in this process, in a copy of the project, as `python evaluate.py` would run there. The
tests that run cases run conftest.SAMPLE, one case of each kind of the bundled example (`sample`).
"""
import io
import json
import os
import re
import socket
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import pytest

from whichstage.cli import run as evaluate
from whichstage.calls import retries as live_calls
from whichstage.calls.progress import Progress
from whichstage.standins import ollama as ollama_standin
from conftest import OFFLINE, SAMPLE, all_report, copy_cases, recorded_calls, serial_judge
from whichstage.standins.ollama import StandIn, serve

HERE = Path(__file__).parents[2]
OFFLINE_REPORT = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())  # the dev split
OFFLINE_ALL = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.all.json").read_text())  # every case
MODELS = {"DOCS_MODEL": "standin-chat", "DOCS_EMBEDDER": "standin-embed", "DOCS_JUDGE": "standin-judge"}
# DeepEval's requests per metric (include_reason on): faithfulness asks truths, claims, verdicts and a reason.
# The behaviour judgements are GEval with fixed evaluation steps: one request gives the score and its reason.
REQUESTS_PER_METRIC = {"faithfulness": 4, "answer_relevancy": 3, "contextual_recall": 2, "contextual_precision": 2,
                       "abstained": 1, "ignored_planted": 1, "facts": 1, "lacks-in-context": 1, "lacks-in-pages": 1}
STANDIN_RUN = "docs-assistant+standin-chat+standin-embed+standin-judge"
CASES = [c for c in json.loads((HERE / "cases.json").read_text())["cases"] if c["id"] in SAMPLE]  # `sample`'s


def offline_rows(report: dict) -> list[dict]:
    """The rows of a bundled offline report (OFFLINE_REPORT, OFFLINE_ALL) of the cases `sample` holds."""
    return [r for r in report["rows"] if r["id"] in SAMPLE]


@dataclass
class Done:
    """What `python evaluate.py` would have left: its exit code and what it wrote."""
    returncode: int
    stdout: str
    stderr: str


def run(folder: Path, host: str, *args: str, no_sleep: bool = False, **env: str) -> Done:
    """`evaluate.py --live --quiet` in `folder`, against the Ollama server at `host`, in this process: HERE and
    the working directory are `folder`, no other DOCS_* or OLLAMA_* variable is set; with `no_sleep`, retries
    cost no time (the backoff is real code, only its sleep is skipped)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        if no_sleep:
            mp.setattr(live_calls, "sleep", lambda seconds: None)
        for name in [k for k in os.environ if k in MODELS or k.startswith("OLLAMA")]:
            mp.delenv(name)
        for name, value in {**MODELS, "OLLAMA_HOST": host, "NO_PROXY": "127.0.0.1,localhost",
                            "DEEPEVAL_TELEMETRY_OPT_OUT": "1", **env}.items():
            mp.setenv(name, value)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = evaluate.main(["--live", "--quiet", *args])
    return Done(code, out.getvalue(), err.getvalue())


def replayed(folder: Path) -> dict:
    """The `--split all` report of `python evaluate.py` replaying the offline run in `folder`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        for name, value in OFFLINE.items():
            mp.setenv(name, value)
        with redirect_stdout(io.StringIO()):
            assert evaluate.main(["--split", "all"]) == 0
    return all_report(folder, OFFLINE)


class Answering:
    """The requests the stand-in is still handling. It logs a request after its answer has left, so a client
    can be done before the log says so: tests read the log once the stand-in has settled."""

    def __init__(self):
        self.count, self.changed = 0, threading.Condition()

    def counted(self, handle):
        def counting(handler):
            with self.changed:
                self.count += 1
            try:
                return handle(handler)
            finally:
                with self.changed:
                    self.count -= 1
                    self.changed.notify_all()
        return counting

    def settle(self) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.count == 0, timeout=30), f"{self.count} requests unanswered"


ANSWERING = Answering()


@pytest.fixture(scope="module")
def ollama(shared_ssl_contexts) -> Iterator[StandIn]:
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, ollama_standin)
        for method in ("do_GET", "do_POST"):
            mp.setattr(ollama_standin.Handler, method, ANSWERING.counted(getattr(ollama_standin.Handler, method)))
        with serve() as standin:
            yield standin


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A copy of the project whose cases are conftest.SAMPLE's."""
    return copy_cases(tmp_path / "sample", SAMPLE)


@contextmanager
def serving(standin: StandIn, models=tuple(MODELS.values()), fail: Mapping[str, int] | None = None,
            fail_if: str = "") -> Iterator[StandIn]:
    """The module's stand-in as `serve(models, fail, fail_if)` would start it: its request log empty, and
    complete once the block is left."""
    standin.models, standin.fail, standin.fail_if = list(models), dict(fail or {}), fail_if
    with standin.lock:
        standin.requests.clear()
    try:
        yield standin
    finally:
        ANSWERING.settle()
        standin.models, standin.fail, standin.fail_if = list(MODELS.values()), {}, ""


def host_of(url: str) -> str:
    return url.removeprefix("http://")


def comparable(row: dict) -> dict:
    """A report row without what two runs cannot share: measured times (`*_s`), and the judge's token counts,
    which here are the stand-in server's counts as Ollama reports them, while the lexical judge counts words."""
    # token counts, as below; the verdict judged again as conftest.comparable says
    row = {k: v for k, v in row.items() if not k.endswith("_s") and k not in ("also_spent", "judge_recheck")}
    row["judged"] = {stage: {k: v for k, v in verdict.items() if not k.endswith("_s") and not k.startswith("tokens_")}
                     for stage, verdict in row["judged"].items()}
    return row


def lines_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def error_lines(stderr: str) -> dict[str, str]:
    """The `error: <entry>: <why>` lines, by entry."""
    return {line[len("error: "):].split(": ", 1)[0]: line for line in stderr.splitlines()
            if line.startswith("error: ")}


def test_live_run_through_the_real_ollama_clients_matches_the_offline_report(sample, ollama):
    with serving(ollama) as server:  # a live run calls the models for every split; --split all reports them all
        done = run(sample, host_of(server.url), "--split", "all")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (sample / "recordings" / f"{STANDIN_RUN}.json").exists()
    report = json.loads((sample / "runs" / f"{STANDIN_RUN}.all.json").read_text())
    offline = offline_rows(OFFLINE_ALL)
    assert len(offline) == len(CASES) == len(SAMPLE)

    # The server saw each client: ChatOllama streams with tools, DeepEval asks with a schema, one embed call
    # indexes the pages and one embeds each search query; the retrieval ladder indexes the pages once more
    # and embeds the question of each case with expected pages.
    log = server.requests
    assert all(r["status"] == 200 for r in log), [r for r in log if r["status"] != 200]
    tools = [r for r in log if r["path"] == "/api/chat" and r["kind"] == "tools"]
    traces, metrics = recorded_calls(SAMPLE)  # counterfactual runs included: agent runs that embed nothing
    # A request the run already sent is served, not sent again (the run's last line counts them by kind).
    served = Counter({kind: int(n) for kind, n in re.findall(r"(chat|embedding|judge) (\d+)", done.stderr.split(
        " paid, ")[1])})
    assert len(tools) + served["chat"] == sum(2 if t["tool_calls"] else 1 for t in traces)
    assert all(r["stream"] for r in tools)
    assert server.count("/api/chat", "format") + served["judge"] == sum(REQUESTS_PER_METRIC[m] for m in metrics)
    searches = sum(c["name"] == "search_docs" for r in offline for c in r["tool_calls"])
    laddered = sum(bool(r["expected_docs"]) for r in offline)
    assert server.count("/api/embed") + served["embedding"] == 1 + searches + 1 + laddered
    assert server.count("/api/chat") == len(tools) + server.count("/api/chat", "format")
    assert {r["model"] for r in log if r["path"] == "/api/chat" and r["kind"] == "format"} == {"standin-judge"}

    # DeepEval's OllamaModel drops Ollama's token counts; providers.py counts them.
    assert report["summary"]["tokens"]["judge_in"] > 0 and report["summary"]["tokens"]["judge_out"] > 0
    assert all(v["tokens_in"] > 0 for r in report["rows"] for v in r["judged"].values())

    # The strong check: the same rules through HTTP give the same trace, retrieval and every judged score and
    # reason. Agent tokens match too: the stand-in sends the rules model's counts as Ollama's eval counts.
    assert [comparable(r) for r in report["rows"]] == [comparable(r) for r in offline]
    replay = replayed(sample)  # the offline run of the same cases, for what sums or hashes them
    summary, expected = dict(report["summary"]), dict(replay["summary"])
    for s in (summary, expected):
        s.pop("latency")
        s["tokens"] = {k: v for k, v in s["tokens"].items() if k.startswith("agent")}
    assert summary == expected
    # Measured with the same agent, tools, cases, pages and records; only the models differ (and the project's
    # name, where the key has one, is its folder's: here the copy's).
    ignored = ("project", "model", "embedder", "judge", "offline")
    key = {k: v for k, v in report["key"].items() if k not in ignored}
    assert key == {k: v for k, v in replay["key"].items() if k not in ignored}
    assert report["key"].get("project", sample.name) == sample.name
    assert {k: report["key"][k] for k in ("model", "embedder", "judge")} == \
        {"model": MODELS["DOCS_MODEL"], "embedder": MODELS["DOCS_EMBEDDER"], "judge": MODELS["DOCS_JUDGE"]}
    assert report["key"]["offline"] is False


def test_no_server_exits_2_naming_the_url(project):
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run(project, f"127.0.0.1:{port}")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"evaluate.py: cannot reach an Ollama server at http://127.0.0.1:{port}")
    assert not (project / "recordings" / f"{STANDIN_RUN}.json").exists()


@pytest.mark.parametrize("variable", list(MODELS))
def test_a_model_the_server_lacks_exits_2_naming_it(project, ollama, variable):
    missing = MODELS[variable]
    with serving(ollama, models=[m for m in MODELS.values() if m != missing]) as server:
        done = run(project, host_of(server.url))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0] == (f"evaluate.py: Ollama server at {server.url} has no model {missing!r}: "
                        f"run `ollama pull {missing}`")
    assert [r["path"] for r in server.requests] == ["/api/tags"]  # refused before any model call
    assert not (project / "recordings" / f"{STANDIN_RUN}.json").exists()


def test_chat_500_is_retried_then_exits_3_naming_each_failing_entry(sample, ollama):
    marker = " for "  # in the questions of a dev case and a held-out case: thanks, goodbye
    failing = [c["id"] for c in CASES if marker in c["question"]]
    assert 0 < len(failing) < len(CASES)
    attempts = live_calls.MAX_ATTEMPTS
    with serving(ollama, fail={"standin-chat": 500}, fail_if=marker) as server:
        # One call at a time: concurrent log lines can interleave (see the last test).
        done = run(sample, host_of(server.url), "--concurrency", "1", no_sleep=True)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    errors = error_lines(done.stderr)
    assert set(errors) == {f"agent/{cid}" for cid in failing}
    assert all(line.endswith(f"ResponseError: stand-in: forced HTTP 500 (status code: 500) "
                             f"(gave up after {attempts} attempts)") for line in errors.values()), errors
    lines = lines_of(done.stderr)
    assert sum(line.startswith("retry ") for line in lines) == len(failing) * (attempts - 1)
    assert lines[-1].startswith(f"evaluate.py: incomplete: {len(failing)} cases errored")
    assert len(lines) == len(failing) * attempts + 1, done.stderr  # retries, one error per entry, the verdict
    assert sum(r["status"] == 500 for r in server.requests) == len(failing) * attempts
    assert not (sample / "recordings" / f"{STANDIN_RUN}.json").exists()
    rows = json.loads((sample / "runs" / f"{STANDIN_RUN}.json").read_text())["rows"]
    # the report shows the dev split; the held-out cases errored too, and the verdict above counted them
    assert [r["id"] for r in rows if r["first_failure"] == "error"] == \
        [c["id"] for c in CASES if c["id"] in failing and c["split"] == "dev"]
    assert any(c["split"] == "holdout" for c in CASES if c["id"] in failing)
    assert any(c["split"] == "dev" for c in CASES if c["id"] not in failing)
    assert [comparable(r) for r in rows if r["id"] not in failing] == \
        [comparable(r) for r in offline_rows(OFFLINE_REPORT) if r["id"] not in failing]


def test_judge_404_fails_at_once_naming_the_model_and_a_rerun_resumes(sample, ollama):
    thanks = next(c for c in CASES if c["id"] == "thanks")
    # Only the thanks case's relevancy verdicts and reason quote its question: one entry fails.
    with serving(ollama, fail={"standin-judge": 404}, fail_if=thanks["question"]) as server:
        done = run(sample, host_of(server.url), "--concurrency", "1", no_sleep=True)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    lines = lines_of(done.stderr)
    assert lines == ["error: judge/thanks/answer_relevancy: ResponseError: model 'standin-judge' not found "
                     "(status code: 404)",
                     "evaluate.py: incomplete: 1 case errored (each error is in the report's first failures); "
                     "their completed calls are kept, run --live again to retry the rest"]
    assert sum(r["status"] == 404 for r in server.requests) == 1
    assert not (sample / "recordings" / f"{STANDIN_RUN}.json").exists()
    assert (sample / "recordings" / f".{STANDIN_RUN}.partial.jsonl").is_file()

    with serving(ollama) as server:
        done = run(sample, host_of(server.url))
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stderr
    # Only the missing entry is asked again: no agent run, no embedding, one metric's three requests.
    assert server.count("/api/chat", "tools") == 0 and server.count("/api/embed") == 0
    assert server.count("/api/chat", "format") == REQUESTS_PER_METRIC["answer_relevancy"]
    assert (sample / "recordings" / f"{STANDIN_RUN}.json").exists()
    report = json.loads((sample / "runs" / f"{STANDIN_RUN}.json").read_text())
    assert [comparable(r) for r in report["rows"]] == [comparable(r) for r in offline_rows(OFFLINE_REPORT)]


def test_a_server_failing_every_call_exits_3_without_a_traceback(sample, ollama):
    with serving(ollama, fail={"standin-chat": 500}) as server:
        done = run(sample, host_of(server.url), "--concurrency", "1", no_sleep=True)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 3
    assert set(error_lines(done.stderr)) == {f"agent/{c['id']}" for c in CASES}
    assert lines_of(done.stderr)[-1].startswith(f"evaluate.py: incomplete: {len(CASES)} cases errored")
    assert server.count("/api/chat") == len(CASES) * live_calls.MAX_ATTEMPTS


class SlowStream:
    """A stderr whose writes let other threads run, as a pipe's can, so interleaved writes show."""

    def __init__(self):
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        time.sleep(0.001)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("logger", ["recording.Quiet", "live_calls.Progress"])
def test_lines_logged_by_concurrent_calls_stay_whole(monkeypatch, logger):
    from whichstage.run import scheduler as recording

    stream = SlowStream()
    monkeypatch.setattr(sys, "stderr", stream)
    log = recording.Quiet().log if logger == "recording.Quiet" else Progress(1, "run").log
    lines = [f"error: agent/case-{i}: ResponseError: stand-in: forced HTTP 500 (status code: 500)" for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(log, lines))
    assert sorted("".join(stream.parts).splitlines()) == sorted(lines)

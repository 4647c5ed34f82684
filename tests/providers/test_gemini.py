"""Gemini at the protocol level: the real ChatGoogleGenerativeAI, GoogleGenerativeAIEmbeddings and DeepEval
GeminiModel clients (through providers.py) run `evaluate.py --live` against a stand-in Gemini server on
127.0.0.1 (gemini_standin.py, reached through GOOGLE_GEMINI_BASE_URL), answering through the offline backends.
No network beyond 127.0.0.1.

One stand-in serves the module; `evaluate.main` runs in this process, its retries recording their waits instead
of sleeping. The full run uses the project's default model names, so it is the default `--live` path; it records
one case of each kind of the bundled example (conftest.SAMPLE), not every case.
"""
import functools
import io
import json
import re
import socket
import threading
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import httpx
import pytest

from whichstage._util.exits import Exit
from whichstage.cli import run as evaluate
from whichstage.standins import gemini as gemini_standin
from whichstage.calls import retries as live_calls
from whichstage.providers import preflight, settings as provider_settings
from whichstage._util.redact import KEY_VARIABLES
from whichstage.providers.answers import UnusableAnswer
from whichstage.providers.settings import GEMINI_URL_VARIABLE
from whichstage.run import files as run_files
from whichstage.agent.factory import rules_roles
from whichstage.providers.names import DEFAULT_EMBEDDER, DEFAULT_JUDGE, DEFAULT_MODEL
from conftest import SAMPLE, client_call, comparable, copy_cases, load_project, serial_judge, recorded_calls
from whichstage.standins.gemini import serve
from whichstage.standins.gemini_faults import Fault
from whichstage.calls.retries import CallFailed, with_retries
from whichstage.calls.errors import is_transient, retry_after
from whichstage.offline.models import plan_tool_calls

HERE = Path(__file__).parents[2]
CASES = {c["id"]: c for c in json.loads((HERE / "cases.json").read_text())["cases"]}
QUESTION = {cid: c["question"] for cid, c in CASES.items()}
DEFAULTS = {"model": DEFAULT_MODEL, "embedder": DEFAULT_EMBEDDER, "judge": DEFAULT_JUDGE}
STANDIN = {"DOCS_MODEL": "gemini-standin-chat", "DOCS_EMBEDDER": "gemini-standin-embed",
           "DOCS_JUDGE": "gemini-standin-judge"}
CHAT, EMBED, JUDGE = STANDIN.values()
REJECTED_KEY = "rejected-key"
# DeepEval's requests per metric (include_reason on): faithfulness asks truths, claims, verdicts and a reason.
# The behaviour judgements are GEval with fixed steps: one request each; the answer checks are the facts metric.
REQUESTS_PER_METRIC = {"faithfulness": 4, "answer_relevancy": 3, "contextual_recall": 2, "contextual_precision": 2,
                       "abstained": 1, "ignored_planted": 1, "facts": 1, "lacks-in-context": 1, "lacks-in-pages": 1}
# The bundled project's tools as its rules model is told them: each tool's role and argument types.
LOADED = load_project()
ROLES = rules_roles(LOADED.project, LOADED.records)
TOOLS = {t["name"]: {**ROLES[t["name"]], "arguments": t["parameters"]} for t in LOADED.described.tools
         if t["name"] in ROLES}
SEARCH_QUERY = next(c["args"]["query"] for c in plan_tool_calls(QUESTION["token-leak"], TOOLS)
                    if c["name"] == "search_docs")

# The fault run: each case meets one fault, found by its question (its search query for the embedder).
FAULTS = {
    CHAT: {QUESTION["backup"]: Fault("429", times=1, retry_after=7),       # waits 7 s, then succeeds
           QUESTION["two-laptops"]: Fault("500", times=2),               # retried twice, then succeeds
           QUESTION["restore"]: Fault("503", times=1),                   # retried once, then succeeds
           QUESTION["config-keys"]: Fault("500"),                        # always: 5 attempts, an error
           QUESTION["pipe-colors"]: Fault("blocked"),                    # promptFeedback.blockReason
           QUESTION["dry-run-import"]: Fault("429", retry_after=120),    # more than the retry budget
           "direct-500": Fault("500"), "direct-blocked": Fault("blocked"), "direct-safety": Fault("safety"),
           "direct-no-candidates": Fault("no-candidates")},
    JUDGE: {QUESTION["restore"]: Fault("503", times=1),                  # one judge call retried once
            QUESTION["issue-212"]: Fault("bad-json"),
            QUESTION["issue-231"]: Fault("safety"),                      # finishReason SAFETY
            QUESTION["thanks"]: Fault("no-candidates"),
            "direct-500": Fault("500"), "direct-blocked": Fault("blocked"), "direct-safety": Fault("safety"),
            "direct-no-candidates": Fault("no-candidates"), "direct-bad-json": Fault("bad-json")},
    EMBED: {SEARCH_QUERY: Fault("500"),                                  # always: 5 attempts, an error
            "direct-500": Fault("500")},
}
RECOVERED = ["backup", "two-laptops", "restore"]
ERRORED = {"config-keys": "GoogleAPIError: 500 INTERNAL: An internal error has occurred",
           "pipe-colors": "BlockedResponse: Gemini blocked the prompt for safety (promptFeedback.blockReason SAFETY)",
           "dry-run-import": "GoogleRateLimitError: 429 RESOURCE_EXHAUSTED",
           "issue-212": "InvalidJudgeAnswer: the judge's answer is not valid JSON for DeepEval's Verdicts schema",
           "issue-231": "BlockedResponse: Gemini withheld the answer for safety (finishReason SAFETY)",
           "token-leak": "GoogleGenerativeAIError: 500 INTERNAL",
           "thanks": "EmptyResponse: Gemini returned no candidates"}
FAULT_CASES = set(RECOVERED) | set(ERRORED)  # the fault run records these cases only, one fault each
assert FAULT_CASES <= set(CASES)


@dataclass
class Run:
    project: Path
    code: int
    stderr: str
    sleeps: list
    seconds: float
    requests: list[dict]

    def lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def errors(self) -> dict[str, str]:
        """The `error: <entry>: <why>` lines, by entry."""
        return {line[len("error: "):].split(": ", 1)[0]: line.split(": ", 2)[2] for line in self.lines()
                if line.startswith("error: ")}

    def retries(self, entry_prefix: str) -> list[str]:
        return [line for line in self.lines() if line.startswith("retry ") and f" for {entry_prefix}" in line]

    def count(self, **match) -> int:
        return sum(all(r.get(k) == v for k, v in match.items()) for r in self.requests)

    def report(self, model: str) -> dict:
        return report_of(self.project, model)


def keyed(pattern: Path, model: str, key=lambda data: data.get("key", {}), embedder: Optional[str] = None) -> list[dict]:
    """The JSON files matching `pattern` whose key names `model` (and `embedder`, when given: the bundled
    `rules` runs are two, the hash embedder's and e5-small's): found by content, not by file name."""
    found = [json.loads(p.read_text()) for p in pattern.parent.glob(pattern.name)]
    return [data for data in found if isinstance(data, dict) and key(data).get("model") == model
            and embedder in (None, key(data).get("embedder"))]


def report_of(project: Path, model: str, split: str = "all", embedder: Optional[str] = None) -> dict:
    """The report of every case of `project` (the runs here record and report --split all)."""
    found = [r for r in keyed(project / "runs" / "*.json", model, embedder=embedder) if r.get("split") == split]
    assert len(found) == 1, f"{len(found)} reports for {model}"
    return found[0]


def journal_of(project: Path, model: str) -> dict:
    """The entries of the journal (recordings/.NAME.partial.jsonl: a header line, then one line per entry)
    whose header names `model`."""
    journals = [f for f in (project / "recordings").glob(".*.partial.jsonl")
                if json.loads(f.read_text().splitlines()[0]).get("key", {}).get("model") == model]
    assert len(journals) == 1, f"{len(journals)} journals for {model}"
    items = [json.loads(line) for line in journals[0].read_text().splitlines()[1:]]
    return {item["entry"]: item["value"] for item in items if "entry" in item}  # not its requests' lines


def run(project: Path, standin, *args: str, **env: str) -> Run:
    """`evaluate.main(args)` in `project` with GOOGLE_API_KEY=test and the stand-in's URL (both overridable;
    None unsets), the model variables unset unless given; waits recorded instead of slept."""
    sleeps: list[float] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        mp.setattr(live_calls, "sleep", sleeps.append)
        for variable in (*run_files.MODEL_VARIABLES.values(), *KEY_VARIABLES, GEMINI_URL_VARIABLE):
            mp.delenv(variable, raising=False)
        for variable, value in {"GOOGLE_API_KEY": "test", GEMINI_URL_VARIABLE: standin.url, **env}.items():
            if value is not None:
                mp.setenv(variable, value)
        start, err = len(standin.requests), io.StringIO()
        began = time.perf_counter()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = evaluate.main(list(args))
        took = time.perf_counter() - began
    return Run(project, code, err.getvalue(), sleeps, took, standin.requests[start:])


def untimed(value):
    return {k: v for k, v in value.items() if not k.endswith("_s")} if isinstance(value, dict) else value


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        with serve(models=[*DEFAULTS.values(), *STANDIN.values()], faults=FAULTS,
                   reject_keys=[REJECTED_KEY]) as server:
            yield server


@pytest.fixture(scope="module")
def offline(tmp_path_factory, standin) -> tuple[Path, dict]:
    """A copy of the project holding one case of each kind (conftest.SAMPLE), and the offline report of those
    cases replayed there from the bundled recording."""
    project = copy_cases(tmp_path_factory.mktemp("gemini"), SAMPLE)
    replayed = run(project, standin, "--split", "all")
    assert replayed.code == 0, replayed.stderr
    assert replayed.requests == []
    report = report_of(project, "rules", embedder="hash")
    assert sorted(r["id"] for r in report["rows"]) == sorted(SAMPLE)
    return project, report


@functools.cache
def bundled_row(cid: str) -> dict:
    """The row of case `cid` in the bundled offline report of every case (runs/, hash embedder)."""
    return next(r for r in report_of(HERE, "rules", embedder="hash")["rows"] if r["id"] == cid)


@pytest.fixture(scope="module")
def full_run(offline, standin) -> Run:
    """`evaluate.py --live --quiet` with the default Gemini names, in the offline report's project (one case of
    each kind)."""
    return run(offline[0], standin, "--live", "--quiet", "--split", "all")


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory, standin) -> Run:
    project = copy_cases(tmp_path_factory.mktemp("faults"), FAULT_CASES)
    return run(project, standin, "--live", "--quiet", "--split", "all", **STANDIN)


# ---- the default path, end to end -----------------------------------------------------------------------

def test_the_default_gemini_path_reproduces_the_offline_report(full_run, offline, standin):
    offline_report = offline[1]
    assert full_run.code == 0, full_run.stderr
    # no retry, no warning, no traceback: only the line saying what was recorded
    assert full_run.stderr.startswith("recorded ") and ", kept 0: wrote " in full_run.stderr and \
        len(full_run.stderr.splitlines()) == 1
    report = full_run.report(DEFAULTS["model"])
    assert {k: report["key"][k] for k in DEFAULTS} == DEFAULTS and report["key"]["offline"] is False
    # The strong check: the same rules through Gemini's REST API and the three real clients give the same
    # answer, tool calls with arguments, retrieved ids, every score and reason, and every token count.
    assert [comparable(r) for r in report["rows"]] == [comparable(r) for r in offline_report["rows"]]
    summary, expected = dict(report["summary"]), dict(offline_report["summary"])
    for s in (summary, expected):  # the totals of tokens count the verdicts judged again, which the offline
        s.pop("latency"), s.pop("cost"), s.pop("tokens")  # judge's calibration asks for; each row's are compared
    assert summary == expected
    # The recording replays with no key and no request, to the same rows.
    replayed = run(full_run.project, standin, "--model", DEFAULTS["model"], GOOGLE_API_KEY=None)
    assert replayed.code == 0 and replayed.requests == [], replayed.stderr
    assert [comparable(r) for r in full_run.report(DEFAULTS["model"])["rows"]] == \
        [comparable(r) for r in report["rows"]]


def test_each_client_reached_the_server_as_expected(full_run, offline):
    rows = offline[1]["rows"]
    log = full_run.requests
    assert log and all(r["status"] == 200 for r in log), [r for r in log if r["status"] != 200]
    # The preflight asked once per distinct model (the agent's model is also the judge), before any call.
    gets = [r["model"] for r in log if r["kind"] == "get"]
    assert sorted(gets) == sorted({DEFAULTS["model"], DEFAULTS["embedder"]})
    assert {r["kind"] for r in log[:len(gets)]} == {"get"}
    # Agent turns: one, plus one more after the tools; DeepEval's structured requests; embeddings: one batch
    # indexes the pages, one embeds each search query, and the retrieval ladder indexes the pages once more
    # and embeds the question of each case with expected pages. Counterfactual runs (search returns the
    # expected pages) are agent runs too, and embed nothing. A request the run already sent is served, not sent
    # again (the run's last line counts them by kind).
    traces, metrics = recorded_calls(SAMPLE)
    served = Counter({kind: int(n) for kind, n in re.findall(r"(chat|embedding|judge) (\d+)", full_run.stderr.split(
        " paid, ")[1])})
    assert full_run.count(kind="chat", model=DEFAULTS["model"]) + served["chat"] == \
        sum(2 if t["tool_calls"] else 1 for t in traces)
    assert full_run.count(kind="judge", model=DEFAULTS["judge"]) + served["judge"] == \
        sum(REQUESTS_PER_METRIC[m] for m in metrics)
    searches = sum(c["name"] == "search_docs" for r in rows for c in r["tool_calls"])
    laddered = sum(bool(r["expected_docs"]) for r in rows)
    assert full_run.count(kind="embed", model=DEFAULTS["embedder"]) + served["embedding"] == \
        1 + searches + 1 + laddered


def test_agent_tokens_are_geminis_usage_metadata_and_the_judge_has_a_cost(full_run):
    from deepeval.models.llms.constants import GEMINI_MODELS_DATA

    report = full_run.report(DEFAULTS["model"])
    tokens = report["summary"]["tokens"]
    # Each answer's usageMetadata, once for each entry that used it (a request sent again is served, not sent).
    answers = [r for r in keyed(full_run.project / "recordings" / "*.json", DEFAULTS["model"])[0]["requests"].values()
               if r["kind"] != "embedding"]
    used = {kind: [(r["json"]["usageMetadata"], len(r["entries"])) for r in answers if r["kind"] == kind]
            for kind in ("chat", "judge")}
    for kind, stage in (("chat", "agent"), ("judge", "judge")):
        assert tokens[f"{stage}_in"] == sum(u["promptTokenCount"] * n for u, n in used[kind]) > 0
        assert tokens[f"{stage}_out"] == sum(u["candidatesTokenCount"] * n for u, n in used[kind]) > 0
    assert sum(n for u, n in used["chat"] + used["judge"]) > len(used["chat"] + used["judge"])
    # DeepEval prices the judge's usageMetadata; the report adds the costs up.
    price = GEMINI_MODELS_DATA.get(DEFAULTS["judge"])
    assert report["summary"]["cost"] is not None and report["summary"]["cost"] > 0
    assert report["summary"]["cost"] == pytest.approx(
        tokens["judge_in"] * price.input_price + tokens["judge_out"] * price.output_price, rel=1e-4)
    assert all(v["cost"] > 0 for r in report["rows"] for v in r["judged"].values())


# ---- faults: retried, waited, or an entry's error ---------------------------------------------------------

def test_the_fault_run_exits_3_with_one_error_per_failed_entry_and_no_traceback(fault_run):
    assert fault_run.code == Exit.INCOMPLETE, fault_run.stderr
    assert "Traceback" not in fault_run.stderr
    assert fault_run.lines()[-1].startswith(f"evaluate.py: incomplete: {len(ERRORED)} cases errored")
    rows = {r["id"]: r for r in fault_run.report(CHAT)["rows"]}
    assert {cid for cid, r in rows.items() if r["first_failure"] == "error"} == set(ERRORED)
    errors = fault_run.errors()
    for cid, cause in ERRORED.items():
        assert cause in rows[cid]["error"], rows[cid]["error"]
        assert rows[cid]["error"] in (f"{entry}: {why}" for entry, why in errors.items())  # its entry's own line
    for entry in errors:  # an error is never a score
        kind, cid, *stage = entry.split("/")
        assert (rows[cid]["answer"] is None and rows[cid]["judged"] == {}) if kind == "agent" else \
            stage[0] not in rows[cid]["judged"]
    assert keyed(fault_run.project / "recordings" / "*.json", CHAT) == []  # no recording from an incomplete run


def test_a_429_waits_its_retry_after_then_succeeds(fault_run):
    marker = QUESTION["backup"]
    assert fault_run.count(model=CHAT, marker=marker, status=429) == 1
    assert fault_run.retries("agent/backup") == [
        "retry 1/4 for agent/backup in 7.0s (Retry-After): GoogleRateLimitError: 429 RESOURCE_EXHAUSTED: "
        "Resource has been exhausted (e.g. check quota)."]
    assert fault_run.sleeps.count(7.0) == 1
    assert fault_run.count(model=CHAT, marker=marker, status=200) == 2  # both turns of the retried run
    row = next(r for r in fault_run.report(CHAT)["rows"] if r["id"] == "backup")
    assert comparable(row) == comparable(bundled_row("backup"))


def test_a_retry_after_beyond_the_budget_gives_up_at_once(fault_run):
    error = fault_run.errors()["agent/dry-run-import"]
    assert error.endswith("(the server asked to retry after 120s, more than the 60s left of the 60s retry "
                          "budget: gave up after 1 attempt)"), error
    assert fault_run.count(model=CHAT, marker=QUESTION["dry-run-import"]) == 1
    assert fault_run.retries("agent/dry-run-import") == [] and 120 not in fault_run.sleeps


def test_500_and_503_are_retried_counted_and_recover(fault_run):
    assert fault_run.count(model=CHAT, marker=QUESTION["two-laptops"], status=500) == 2
    assert len(fault_run.retries("agent/two-laptops")) == 2
    assert fault_run.count(model=CHAT, marker=QUESTION["restore"], status=503) == 1
    assert len(fault_run.retries("agent/restore")) == 1
    # The judge's 503 reached the harness, so neither DeepEval's tenacity nor google-genai retried it.
    assert fault_run.count(model=JUDGE, marker=QUESTION["restore"], status=503) == 1
    assert len(fault_run.retries("judge/restore/")) == 1 and "ServerError: 503 UNAVAILABLE" in \
        fault_run.retries("judge/restore/")[0]
    rows = {r["id"]: r for r in fault_run.report(CHAT)["rows"]}
    for cid in RECOVERED:
        assert comparable(rows[cid]) == comparable(bundled_row(cid))


def test_a_call_that_always_fails_reaches_the_server_exactly_max_attempts_times(fault_run):
    attempts = live_calls.MAX_ATTEMPTS
    assert fault_run.count(model=CHAT, marker=QUESTION["config-keys"], status=500) == attempts
    # The agent's search and the retrieval ladder's ranking of the same question each make every attempt.
    assert fault_run.count(model=EMBED, marker=SEARCH_QUERY, status=500) == 2 * attempts
    for entry in ("agent/config-keys", "agent/token-leak", "ladder/token-leak/vector"):
        assert fault_run.errors()[entry].endswith(f"(gave up after {attempts} attempts)")
        assert len(fault_run.retries(entry)) == attempts - 1


def test_blocked_empty_and_invalid_answers_are_entry_errors_never_retried(fault_run):
    errors = fault_run.errors()
    for cid, fault in (("pipe-colors", "blocked"), ("issue-212", "bad-json"), ("issue-231", "safety"),
                       ("thanks", "no-candidates")):
        failed = {entry: why for entry, why in errors.items() if entry.split("/")[1] == cid}
        assert failed and all(ERRORED[cid] in why for why in failed.values()), failed
        assert fault_run.count(marker=QUESTION[cid], fault=fault) == len(failed)  # one request per entry
        assert not any(f"/{cid}" in line for line in fault_run.lines() if line.startswith("retry "))


def test_every_completed_entry_is_kept_in_the_journal(fault_run):
    [offline_recording] = keyed(HERE / "recordings" / "*.json", "rules", embedder="hash")
    recorded = offline_recording["entries"]
    kept = journal_of(fault_run.project, CHAT)
    failed = set(fault_run.errors())
    judge_failed = {entry.split("/")[1] for entry in failed if entry.startswith("judge/")}
    assert judge_failed == {"issue-212", "issue-231", "thanks"}
    # Every entry of the recovered cases, and of the cases whose judge failed every entry that did not fail
    # but the answer check and the verdict judged again, asked only once the verdicts they follow exist (and the
    # latter only by the offline judge's calibration report); the retrieval ladder's rankings need
    # no trace, so every one of the run's cases that did not fail.
    done = {name for name in recorded if name.split("/")[1] in RECOVERED or
            (name.split("/")[1] in judge_failed and name not in failed and "/lacks-in-" not in name) or
            (name.startswith("ladder/") and name.split("/")[1] in FAULT_CASES and name not in failed)}
    done = {name for name in done if not name.endswith("#again")}
    assert set(kept) == done
    assert {name: untimed(value) for name, value in kept.items()} == \
        {name: untimed(recorded[name]["value"]) for name in done}


# ---- each client on its own: retries off, unusable answers named --------------------------------------------

def direct_call(client: str, marker: str):
    """One call of one real client at the stand-in, as the harness makes it."""
    return client_call(client, {"chat": CHAT, "embed": EMBED, "judge": JUDGE}[client], marker)


@pytest.fixture
def at_standin(standin, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv(GEMINI_URL_VARIABLE, standin.url)
    monkeypatch.setattr(live_calls, "sleep", lambda seconds: None)
    return standin


@pytest.mark.parametrize("client", ["chat", "embed", "judge"])
def test_each_client_makes_exactly_one_request_per_harness_attempt(at_standin, client):
    model = {"chat": CHAT, "embed": EMBED, "judge": JUDGE}[client]
    before = at_standin.count(model=model, marker="direct-500")
    with pytest.raises(CallFailed, match=f"gave up after {live_calls.MAX_ATTEMPTS} attempts"):
        with_retries(f"{client}/x", direct_call(client, "direct-500"), lambda line: None)
    assert at_standin.count(model=model, marker="direct-500") - before == live_calls.MAX_ATTEMPTS


@pytest.mark.parametrize("client", ["chat", "embed", "judge"])
def test_each_client_times_out_and_only_the_harness_retries_it(at_standin, client, monkeypatch):
    monkeypatch.setattr(provider_settings, "CALL_TIMEOUT_S", 0.1)
    silent = Silent()
    monkeypatch.setenv(GEMINI_URL_VARIABLE, silent.url)
    try:
        with pytest.raises(CallFailed, match=f"timed out.*gave up after {live_calls.MAX_ATTEMPTS} attempts"):
            with_retries(f"{client}/x", direct_call(client, "anything"), lambda line: None)
    finally:
        silent.close()
    assert len(silent.held) == live_calls.MAX_ATTEMPTS  # one connection per attempt of the harness


@pytest.mark.parametrize("client, fault, cause", [
    ("chat", "blocked", "BlockedResponse: Gemini blocked the prompt for safety (promptFeedback.blockReason SAFETY)"),
    ("chat", "safety", "BlockedResponse: Gemini withheld the answer for safety (finishReason SAFETY)"),
    ("chat", "no-candidates", "EmptyResponse: Gemini returned no candidates"),
    ("judge", "blocked", "BlockedResponse: Gemini blocked the prompt for safety (promptFeedback.blockReason SAFETY)"),
    ("judge", "safety", "BlockedResponse: Gemini withheld the answer for safety (finishReason SAFETY)"),
    ("judge", "no-candidates", "EmptyResponse: Gemini returned no candidates"),
    ("judge", "bad-json", "InvalidJudgeAnswer: the judge's answer is not valid JSON for DeepEval's Truths schema"),
])
def test_an_unusable_answer_is_a_plain_error_after_one_attempt(at_standin, client, fault, cause):
    marker = f"direct-{fault}"
    before = at_standin.count(marker=marker)
    with pytest.raises(CallFailed) as failed:
        with_retries(f"{client}/x", direct_call(client, marker), lambda line: pytest.fail(f"retried: {line}"))
    assert str(failed.value).startswith(f"{client}/x: {cause}"), failed.value
    assert "\n" not in str(failed.value)
    assert isinstance(failed.value.__cause__, UnusableAnswer)
    assert not is_transient(failed.value.__cause__)
    assert at_standin.count(marker=marker) - before == 1


# ---- Retry-After, wherever google-genai keeps it ------------------------------------------------------------

def genai_error(status: int, headers: dict | None = None, body: dict | None = None):
    from google.genai import errors

    body = body or {"error": {"code": status, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    response = httpx.Response(status, headers=headers or {}, json=body)
    try:
        errors.APIError.raise_for_response(response)
    except errors.APIError as e:
        return e
    raise AssertionError("no error raised")


def wrapped(error: Exception) -> Exception:
    """As LangChain wraps it: its own error, raised from google-genai's."""
    try:
        raise RuntimeError("Error calling model 'gemini-x' (RESOURCE_EXHAUSTED)") from error
    except RuntimeError as outer:
        return outer


def test_retry_after_is_read_from_the_header_the_http_date_or_googles_retry_info():
    assert retry_after(genai_error(429, {"Retry-After": "7"})) == 7.0
    assert retry_after(wrapped(genai_error(429, {"retry-after": "2.5"}))) == 2.5
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= retry_after(genai_error(503, {"Retry-After": date})) <= 30
    info = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}}
    assert retry_after(wrapped(genai_error(429, body=info))) == 37.0
    assert retry_after(genai_error(429)) is None and retry_after(TimeoutError()) is None


def test_retry_after_counts_against_the_budget_left(monkeypatch):
    waits, logged = [], []
    monkeypatch.setattr(live_calls, "sleep", waits.append)
    asked = iter(["50", "20"])

    def call():
        raise wrapped(genai_error(429, {"Retry-After": next(asked)}))

    with pytest.raises(CallFailed) as failed:
        with_retries("judge/x", call, logged.append)
    assert waits == [50.0]
    assert str(failed.value) == ("judge/x: RuntimeError: 429 RESOURCE_EXHAUSTED: quota (the server asked to retry "
                                 "after 20s, more than the 10s left of the 60s retry budget: gave up after 2 "
                                 "attempts)")
    assert logged == ["retry 1/4 for judge/x in 50.0s (Retry-After): RuntimeError: 429 RESOURCE_EXHAUSTED: quota"]


# ---- the preflight: one line, fast, before any paid call -----------------------------------------------------

def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_refused(done: Run, line: str) -> None:
    assert done.code == Exit.BAD_INPUT
    assert done.lines() == [line], done.stderr
    assert done.seconds < 10  # well under the 30 s a user may wait
    bundled = {p.name for p in (HERE / "recordings").glob("*.json")}
    assert {p.name for p in (done.project / "recordings").iterdir()} == bundled  # nothing written
    assert all(r["kind"] in ("get", "rejected-key", "unknown-model") for r in done.requests)  # no paid call


def test_an_unreachable_server_exits_2_naming_the_model_the_url_and_the_variable(project, standin):
    port = closed_port()
    done = run(project, standin, "--live", "--quiet", GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{port}")
    assert_refused(done, f"evaluate.py: cannot reach Gemini at http://127.0.0.1:{port} (GOOGLE_GEMINI_BASE_URL) "
                         f"for model {DEFAULTS['model']}: connection refused")


class Silent:
    """A server on 127.0.0.1 that accepts connections, reads, and never answers; it counts connections."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                self.held.append(self.socket.accept()[0])
            except OSError:  # closed
                return

    def close(self):
        self.socket.close()
        for connection in self.held:
            connection.close()


def test_a_server_that_never_answers_exits_2_after_one_short_timeout(project, standin, monkeypatch):
    monkeypatch.setattr(preflight, "PREFLIGHT_TIMEOUT_S", 0.5)
    silent = Silent()
    try:
        done = run(project, standin, "--live", "--quiet", GOOGLE_GEMINI_BASE_URL=silent.url)
    finally:
        silent.close()
    assert_refused(done, f"evaluate.py: cannot reach Gemini at {silent.url} (GOOGLE_GEMINI_BASE_URL) for model "
                         f"{DEFAULTS['model']}: no answer within 0.5s")
    assert len(silent.held) == 1  # one attempt: the SDK did not retry the timeout


@pytest.mark.parametrize("variable", list(STANDIN))
def test_an_unknown_model_exits_2_naming_it_and_the_url(project, standin, variable):
    done = run(project, standin, "--live", "--quiet", **{**STANDIN, variable: "gemini-nope"})
    assert_refused(done, f"evaluate.py: Gemini at {standin.url} (GOOGLE_GEMINI_BASE_URL) has no model "
                         f"'gemini-nope' (HTTP 404 NOT_FOUND: models/gemini-nope is not found for API version "
                         f"v1, or is not supported for get. Call ListModels to see the list of available models "
                         f"and their supported methods.)")
    assert done.count(kind="unknown-model") == 1


@pytest.mark.parametrize("variable", KEY_VARIABLES)
def test_a_rejected_key_exits_2_naming_its_variable(project, standin, variable):
    done = run(project, standin, "--live", "--quiet", **{"GOOGLE_API_KEY": None, variable: REJECTED_KEY})
    assert_refused(done, f"evaluate.py: Gemini at {standin.url} (GOOGLE_GEMINI_BASE_URL) rejected the API key in "
                         f"{variable} for model {DEFAULTS['model']} (HTTP 400 INVALID_ARGUMENT: API key not valid. "
                         f"Please pass a valid API key.)")
    assert done.count(kind="rejected-key") == 1


def test_no_key_names_the_variable_to_set_and_asks_nothing(project, standin):
    done = run(project, standin, "--live", "--quiet", GOOGLE_API_KEY=None)
    assert_refused(done, "evaluate.py: set GOOGLE_API_KEY (or GEMINI_API_KEY) to record with a Gemini model")
    assert done.requests == []

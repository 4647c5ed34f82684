"""The evaluation code: pure scoring, the cassette's refusals, and the CLI on a copy of the project.

Everything runs offline: replays read the bundled recording; live runs use the offline backends.
"""
import itertools
import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from whichstage.judging import metrics as judging
from whichstage.recording.store import Cassette, Mode, Stale
from whichstage._util.files import RecordingError
from conftest import OFFLINE, OFFLINE_RUN, copy_project, load_project, offline_inputs, own_package, untimed
from whichstage.run.pipeline import evaluate
from whichstage.run.scheduler import Live
from whichstage.run.files import header
from whichstage.render.markdown import markdown
from whichstage.scoring.tools import argument_errors, as_declared, deepeval_disagrees, tool_verdict
from whichstage.render.row_view import failure_reason
from whichstage.scoring.gating import first_failure
from whichstage.scoring.retrieval import retrieval_scores

HERE = Path(__file__).parent
TAPE = HERE / "recordings" / f"{OFFLINE_RUN}.json"
CASES_NAME = json.loads((HERE / "cases.json").read_text())["name"]


def tool_scores(question, calls, expected, judge):
    """DeepEval's score and the harness's verdict on it, as a row gets them."""
    return tool_verdict(calls, expected, judging.tool_scores(question, calls, expected, judge))


@pytest.fixture(scope="module")
def judge():
    from whichstage.offline.lexical_judge import LexicalJudge

    return LexicalJudge()


def calls(*names):
    return [{"name": n, "args": {}} for n in names]


def inputs() -> dict:
    return {name: json.loads((HERE / f"{name}.json").read_text()) for name in ("cases", "docs", "issues")}


# ---- retrieval ------------------------------------------------------------------------------------------

# Worked by hand (k = 3): a page is retrieved at rank r when some search returned it at rank r <= k; recall is
# the share of expected pages retrieved; RR is 1 over the best rank any search gave an expected page.
RETRIEVAL_TABLE = [
    # one search: the textbook figures of one ranked list
    ([["init", "storage", "sync"]], ["storage"], (True, 1.0, 1 / 2, [])),
    ([["init", "sync", "tokens"]], ["storage"], (False, 0.0, 0.0, ["storage"])),
    ([["import", "output", "init"]], ["output", "config"], (True, 0.5, 1 / 2, ["config"])),
    ([["config", "import", "output"]], ["output", "config"], (True, 1.0, 1 / 1, [])),
    # two searches: the second found the page first; as one list of six it would sit at rank 4 (RR 0.25)
    ([["init", "sync", "tokens"], ["storage", "init", "sync"]], ["storage"], (True, 1.0, 1 / 1, [])),
    # two searches found one expected page each
    ([["init", "storage", "sync"], ["tokens", "sync", "config"]], ["storage", "config"], (True, 1.0, 1 / 2, [])),
    # the same page at rank 3 and at rank 2: its rank is the better one
    ([["init", "sync", "storage"], ["tokens", "storage", "init"]], ["storage"], (True, 1.0, 1 / 2, [])),
    # both searches returned storage first; config is rank 2 of the second, not rank 3 of one list
    ([["storage", "init", "sync"], ["storage", "config", "tokens"]], ["config"], (True, 1.0, 1 / 2, [])),
    # no search at all
    ([], ["storage"], (False, 0.0, 0.0, ["storage"])),
]


@pytest.mark.parametrize("searches, expected, figures", RETRIEVAL_TABLE)
def test_retrieval_figures_per_search_match_the_hand_worked_table(searches, expected, figures):
    hit, recall, rr, missed = figures
    assert retrieval_scores(searches, expected, 3) == \
        {"hit": hit, "recall": recall, "reciprocal_rank": rr, "missed": missed}


def test_a_page_below_rank_k_of_its_search_is_not_retrieved_at_k():
    four = [["init", "sync", "tokens", "storage"]]
    assert retrieval_scores(four, ["storage"], 3) == \
        {"hit": False, "recall": 0.0, "reciprocal_rank": 0.0, "missed": ["storage"]}
    assert retrieval_scores(four, ["storage"], 4)["reciprocal_rank"] == 0.25


def flat_scores(retrieved: list[str], expected: list[str]) -> dict:
    """The rule before per-search ranking: every returned page ranked as one list, first copy kept."""
    ranked = list(dict.fromkeys(retrieved))
    ranks = sorted(ranked.index(page) + 1 for page in set(expected) if page in ranked)
    return {"hit": bool(ranks), "recall": len(ranks) / len(set(expected)),
            "reciprocal_rank": 1 / ranks[0] if ranks else 0.0, "missed": sorted(set(expected) - set(ranked))}


@pytest.mark.parametrize("expected", [["a"], ["c"], ["a", "c"], ["b", "d"], ["d"]])
def test_one_search_scores_as_the_one_list_did(expected):
    for ranked in itertools.permutations(["a", "b", "c", "d"], 3):
        assert retrieval_scores([list(ranked)], expected, 3) == flat_scores(list(ranked), expected)


def test_case_without_expected_pages_skips_retrieval():
    assert retrieval_scores([["init"]], [], 3) is None


def search_output(*pages: str) -> dict:
    return {"tool": "search_docs", "content": json.dumps([{"id": p, "text": f"{p} text"} for p in pages])}


def test_a_row_ranks_each_search_of_its_trace_on_its_own():
    """Through evaluate's own row: two searches, the expected page first in the second one."""
    from whichstage.run import rows as module
    from whichstage.recording.store import ABSENT

    trace = {"answer": "a", "usage": {}, "agent_s": 0.1,
             "tool_calls": [{"name": "search_docs", "args": {"query": "q1"}},
                            {"name": "search_docs", "args": {"query": "q2"}}],
             "tool_outputs": [search_output("init", "sync", "tokens"), search_output("storage", "init", "sync")],
             "retrieved": ["init", "sync", "tokens", "storage", "init", "sync"]}

    class Recorded:
        """A cassette holding only this trace and its tool score."""
        def lookup(self, name, deps_of):
            found = {"agent/two": trace, "tools/two": PERFECT}
            return (found[name], []) if name in found else (ABSENT, ["not recorded"])

    case = {"id": "two", "question": "q", "category": "answerable", "split": "dev", "expected_behavior": "answer",
            "reference": "r", "expected_docs": ["storage"], "expected_tools": ["search_docs"]}
    found = offline_inputs()
    row = module.case_row(found, case, Recorded())
    assert row["retrieval"] == {"hit": True, "recall": 1.0, "reciprocal_rank": 1.0, "missed": [], "k": 3}
    assert found.view(trace)["searches"] == [["init", "sync", "tokens"], ["storage", "init", "sync"]]


# ---- tools ----------------------------------------------------------------------------------------------

def test_extra_tool_call_scores_one_in_deepeval_but_fails_here(judge):
    scores = tool_scores("q", calls("get_issue", "search_docs"), ["get_issue"], judge)
    assert scores["deepeval"]["score"] == scores["score"] == 1.0
    assert scores["unexpected"] == ["search_docs"] and not scores["pass"]
    assert scores["reason"] == "unexpected search_docs"


def test_missing_tool_call_fails(judge):
    scores = tool_scores("q", calls("search_docs"), ["get_issue", "search_docs"], judge)
    assert scores["score"] == 0.5 and scores["missing"] == ["get_issue"] and not scores["pass"]


def test_tool_call_when_none_expected_fails(judge):
    assert tool_scores("q", calls("search_docs"), [], judge)["score"] == 0.0


def test_no_call_when_none_expected_passes(judge):
    assert tool_scores("q", [], [], judge)["pass"]


SEARCH = {"name": "search_docs", "args": {"query": "pipe colors"}}


def test_two_identical_searches_expected_and_made_pass_though_deepeval_scores_half(judge):
    """DeepEval counts identical calls (same tool, same arguments) once: two expected searches, two identical
    ones made, and it scores 0.5 with 'missing tools'. Each expected entry here needs a call of its own, and gets one."""
    verdict = tool_scores("q", [SEARCH, SEARCH], ["search_docs", "search_docs"], judge)
    assert verdict["deepeval"]["score"] == 0.5 and "missing tools" in verdict["deepeval"]["reason"]
    assert verdict["pass"] and verdict["score"] == 1.0 and verdict["missing"] == []
    assert verdict["reason"] == "every expected call made: 2 calls to search_docs"
    assert deepeval_disagrees(verdict)


def test_one_search_where_two_are_expected_fails_with_the_harness_reason(judge):
    verdict = tool_scores("q", [SEARCH], ["search_docs", "search_docs"], judge)
    assert not verdict["pass"] and verdict["missing"] == ["search_docs"] and verdict["score"] == 0.5
    row = {"first_failure": "tools", "tools": verdict}
    assert failure_reason(row) == "expected 2 calls to search_docs, got 1"  # not DeepEval's "missing tools"
    both = tool_scores("q", [SEARCH], ["get_issue", "search_docs"], judge)  # DeepEval names both missing
    assert failure_reason({"first_failure": "tools", "tools": both}) == "missing get_issue"


def test_a_repeated_expected_tool_among_others_is_counted_per_entry(judge):
    made = [SEARCH, {"name": "get_issue", "args": {"number": 212}}, SEARCH]
    verdict = tool_scores("q", made, ["search_docs", "get_issue", "search_docs"], judge)
    assert verdict["pass"] and round(verdict["deepeval"]["score"], 3) == 0.667
    assert tool_scores("q", made[:2], ["search_docs", "get_issue", "search_docs"], judge)["reason"] == \
        "expected 2 calls to search_docs, got 1"


def test_the_report_shows_the_harness_reason_where_deepeval_disagrees(judge):
    rows = [{**report_row("twice", [SEARCH, SEARCH], ["search_docs", "search_docs"], judge)},
            {**report_row("once", [SEARCH], ["search_docs", "search_docs"], judge)}]
    text = markdown(report_of(rows))
    assert "- `once` **tools**: expected 2 calls to search_docs, got 1" in text
    assert "missing tools" not in text
    assert "`twice` DeepEval 0.50, harness 1.00 (every expected call made: 2 calls to search_docs)." in text
    assert "`once` DeepEval" not in text  # both score 0.5: only the reasons differ, and the harness's is shown
    from whichstage.render.html import html

    page = html(report_of(rows))
    assert "expected 2 calls to search_docs, got 1" in page and "every expected call made: 2 calls to" in page
    assert page.count("ToolCorrectnessMetric disagrees: score 0.50") == 1


def report_row(cid: str, made: list[dict], expected: list[str], judge) -> dict:
    row = {"id": cid, "calls": [c["name"] for c in made], "tool_calls": made, "expected_tools": expected,
           "retrieval": None, "judged": {}, "behaviour": None,
           "tools": tool_verdict(made, expected, judging.tool_scores("q", made, expected, judge))}
    return {**row, "first_failure": first_failure(row)}


def report_of(rows: list[dict]) -> dict:
    from whichstage.scoring.summary import summarize

    return {"key": {"model": "m", "embedder": "e", "judge": "j", "cases": "c@1"}, "k": 3, "threshold": 0.7,
            "split": "dev", "rows": rows, "summary": summarize(rows, 3)}


def issue_call(number):
    return [{"name": "get_issue", "args": {"number": number}}]


def test_right_tool_with_a_wrong_argument_fails_and_names_it():
    verdict = tool_verdict(issue_call(213), ["get_issue"], {"score": 1.0, "reason": ""}, expected_args={"get_issue": {"number": 212}})
    assert not verdict["pass"] and verdict["wrong_args"] == ["get_issue.number: expected 212, got 213"]
    row = {"first_failure": "tools", "tools": verdict}
    assert failure_reason(row) == "wrong argument get_issue.number: expected 212, got 213"


ISSUE_212 = {"get_issue": {"number": 212}}
PERFECT = {"score": 1.0, "reason": ""}
# The bundled agent's tools' argument types, as read from its tools (a test below holds them to it).
PARAMETERS = {"search_docs": {"query": str}, "get_issue": {"number": int},
              "file_bug_report": {"title": str, "body": str}}


def test_right_tool_with_the_right_argument_passes():
    assert tool_verdict(issue_call(212), ["get_issue"], PERFECT, expected_args=ISSUE_212, parameters=PARAMETERS)["pass"]


def test_a_tool_legitimately_called_twice_is_not_under_scored(judge):
    twice = [{"name": "search_docs", "args": {"query": "color"}}, {"name": "search_docs", "args": {"query": "pipe"}}]
    verdict = tool_scores("q", twice, ["search_docs"], judge)
    assert {k: v for k, v in verdict.items() if k != "deepeval"} == \
        {"score": 1.0, "reason": "every expected call made: search_docs", "unexpected": [], "missing": [],
         "wrong_args": [], "pass": True}
    assert verdict["deepeval"]["score"] == 1.0
    looked_twice = issue_call(999) + issue_call(212)  # a wrong guess, then the right issue
    assert tool_verdict(looked_twice, ["get_issue"], PERFECT, expected_args=ISSUE_212, parameters=PARAMETERS)["pass"]


def test_a_number_sent_as_a_string_is_the_number_the_tool_receives():
    for sent in ("212", " 212 ", 212.0, "212.0"):  # what get_issue's StructuredTool turns into 212
        assert tool_verdict(issue_call(sent), ["get_issue"], PERFECT, expected_args=ISSUE_212, parameters=PARAMETERS)["pass"], sent


def test_a_bool_is_never_a_number_although_python_says_true_equals_1():
    verdict = tool_verdict(issue_call(True), ["get_issue"], PERFECT, expected_args={"get_issue": {"number": 1}}, parameters=PARAMETERS)
    assert verdict["wrong_args"] == ["get_issue.number: expected 1, got True (not an int)"]
    undeclared = [{"name": "flag", "args": {"n": True}}]  # no declared type: compared as sent, bool apart
    assert argument_errors(undeclared, {"flag": {"n": 1}}, {}) == ["flag.n: expected 1, got True"]


def test_an_argument_the_tool_would_refuse_is_named_as_such():
    assert tool_verdict(issue_call("two-twelve"), ["get_issue"], PERFECT, expected_args=ISSUE_212, parameters=PARAMETERS)["wrong_args"] == \
        ["get_issue.number: expected 212, got 'two-twelve' (not an int)"]
    assert argument_errors([{"name": "get_issue", "args": {}}], ISSUE_212, PARAMETERS) == \
        ["get_issue.number: expected 212, got (none)"]


LOOKUP = {"lookup": {"repo": str, "number": int}}


def test_several_stated_arguments_must_be_carried_by_one_call():
    split = [{"name": "lookup", "args": {"repo": "tracker", "number": 1}},
             {"name": "lookup", "args": {"repo": "other", "number": "212"}}]
    assert argument_errors(split, {"lookup": {"repo": "tracker", "number": 212}}, LOOKUP) == \
        ["lookup: no one call carries repo='tracker', number=212; each call carries only some of them"]
    one = split + [{"name": "lookup", "args": {"repo": "tracker", "number": "212"}}]
    assert argument_errors(one, {"lookup": {"repo": "tracker", "number": 212}}, LOOKUP) == []


def test_the_declared_types_are_the_agents_tools_parameters():
    assert load_project().described.parameters() == PARAMETERS
    assert as_declared("212", int) == 212 and as_declared("q", str) == "q"
    with pytest.raises(ValueError):
        as_declared(212, str)  # a StructuredTool taking a str refuses a number: no silent str(212)


# ---- first failure --------------------------------------------------------------------------------------

def test_first_failing_stage_is_named():
    row = {"tools": {"pass": True}, "retrieval": {"hit": True, "recall": 0.5},
           "judged": {"faithfulness": {"score": 0.2}, "contextual_recall": {"score": 0.0}}}
    assert first_failure(row) == "retrieval"
    row["retrieval"]["recall"] = 1.0
    assert first_failure(row) == "faithfulness"


def test_contextual_precision_reports_but_does_not_gate():
    row = {"tools": {"pass": True}, "retrieval": None,
           "judged": {"contextual_precision": {"score": 0.0}, "answer_relevancy": {"score": 1.0}}}
    assert first_failure(row) is None


def test_a_metric_without_a_score_fails_its_stage():
    row = {"tools": {"pass": True}, "retrieval": None, "judged": {"answer_relevancy": {"score": None}}}
    assert first_failure(row) == "answer_relevancy"


# ---- the recording and its per-entry keys --------------------------------------------------------------

def test_bundled_recording_says_it_comes_from_the_offline_backends():
    key = json.loads(TAPE.read_text())["key"]
    assert (key["model"], key["embedder"], key["judge"]) == ("rules", "hash", "lexical")
    report = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.json").read_text())
    cases = inputs()["cases"]
    assert report["key"]["offline"] is True and report["key"]["cases"] == f"{cases['name']}@{cases['version']}"


def test_a_recording_for_other_models_is_refused_naming_the_field():
    with pytest.raises(RecordingError, match="judge changed"):
        Cassette(TAPE, header(CASES_NAME, "rules", "hash", "gemma4:e2b"), Mode.REPLAY)


def test_replaying_an_entry_that_was_never_recorded_names_it():
    cassette = Cassette(TAPE, header(CASES_NAME, "rules", "hash", "lexical"), Mode.REPLAY)
    with pytest.raises(Stale, match="agent/unknown-case: not recorded"):
        cassette.get("agent/unknown-case", lambda value: {}, lambda: pytest.fail("a replay must never compute"))


def test_an_entry_whose_dependencies_changed_is_stale_naming_them():
    cassette = Cassette(TAPE, header(CASES_NAME, "rules", "hash", "lexical"), Mode.REPLAY)
    recorded = json.loads(TAPE.read_text())["entries"]["tools/backup"]["deps"]
    with pytest.raises(Stale, match="expected tools changed"):
        cassette.get("tools/backup", lambda value: {**recorded, "expected tools": "0"})


def test_a_missing_recording_is_refused(tmp_path):
    with pytest.raises(RecordingError, match="no recording"):
        Cassette(tmp_path / "none.json", header(CASES_NAME, "rules", "hash", "lexical"), Mode.REPLAY)


def test_an_old_format_recording_is_refused_with_what_to_do(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"key": {"model": "rules"}, "entries": {"agent/x": {"answer": "a"}}}))
    with pytest.raises(RecordingError, match="older format.*record again with --live"):
        Cassette(old, {"model": "rules"}, Mode.REPLAY)


def test_live_mode_records_and_saves_atomically(tmp_path):
    path = tmp_path / "tape.json"
    cassette = Cassette(path, {"model": "m"}, Mode.LIVE)
    deps = lambda value: {"question": "q1"}  # noqa: E731
    assert cassette.get("b", deps, lambda: {"x": (1, 2)}) == {"x": [1, 2]}  # stored as it will read back
    cassette.get("a", deps, lambda: 1)
    assert cassette.save()
    assert json.loads(path.read_text())["entries"] == {"a": {"deps": {"question": "q1"}, "value": 1},
                                                       "b": {"deps": {"question": "q1"}, "value": {"x": [1, 2]}}}
    # no journal or temp file left behind; the lock file of live runs stays, unlocked
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tape.lock", "tape.json"]
    assert Cassette(path, {"model": "m"}, Mode.REPLAY).get("a", deps) == 1


def test_a_live_run_keeps_only_the_entries_it_used_and_writes_nothing_when_they_are_unchanged(tmp_path):
    path = tmp_path / "tape.json"
    first = Cassette(path, {"model": "m"}, Mode.LIVE)
    for name in ("keep", "drop"):
        first.get(name, lambda value: {"q": name}, lambda: name)
    first.save()
    second = Cassette(path, {"model": "m"}, Mode.LIVE)
    second.get("keep", lambda value: {"q": "keep"}, lambda: pytest.fail("kept entries are not paid again"))
    assert second.save() and list(json.loads(path.read_text())["entries"]) == ["keep"]
    third = Cassette(path, {"model": "m"}, Mode.LIVE)
    third.get("keep", lambda value: {"q": "keep"}, lambda: pytest.fail("kept entries are not paid again"))
    before = path.stat().st_mtime_ns
    assert not third.save() and path.stat().st_mtime_ns == before


def test_a_torn_last_journal_line_is_dropped_and_the_rest_kept(tmp_path):
    path = tmp_path / "tape.json"
    cassette = Cassette(path, {"model": "m"}, Mode.LIVE)
    cassette.get("a", lambda value: {}, lambda: 1)
    cassette.get("b", lambda value: {}, lambda: 2)
    cassette.close()  # as a crash would: the process is gone, and its lock with it
    text = cassette.journal.read_text()
    cassette.journal.write_text(text[: len(text) - 5])  # a crash in the middle of the last line
    resumed = Cassette(path, {"model": "m"}, Mode.LIVE)
    assert resumed.get("a", lambda value: {}, lambda: pytest.fail("whole entries are kept")) == 1
    assert resumed.get("b", lambda value: {}, lambda: 3) == 3


# ---- the saved report -----------------------------------------------------------------------------------

def test_replay_reproduces_the_saved_report():
    cassette = Cassette(TAPE, header(CASES_NAME, "rules", "hash", "lexical"), Mode.REPLAY)
    report = evaluate(offline_inputs(), cassette,
                      live=Live(judge=lambda: pytest.fail("a replay needs no judge")))
    assert report == json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
    assert markdown(report) + "\n" == (HERE / "runs" / "docs-assistant+rules+hash+lexical.md").read_text()
    from whichstage.render.html import html

    assert html(report) == (HERE / "runs" / "docs-assistant+rules+hash+lexical.html").read_text()


def test_report_names_the_first_failure_and_why():
    report = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
    failing = [r for r in report["rows"] if r["first_failure"]]
    text = markdown(report)
    for row in failing:
        assert f"`{row['id']}` **{row['first_failure']}**" in text


# ---- the CLI on a copy of the project --------------------------------------------------------------------

def cli(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """A child process: only for what a process boundary proves (imports, signals)."""
    clean = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    return subprocess.run([sys.executable, *args], cwd=folder, capture_output=True, text=True,
                          env={**clean, **env}, timeout=300)


def snapshot(folder: Path) -> dict:
    """What the commands wrote: recordings and the latest reports (not a live run's lock file, which names its
    process, nor the copies runs/history keeps of every run)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.glob("recordings/*")) + sorted(folder.glob("runs/*"))
            if p.suffix != ".lock" and p.is_file()}


def comparable(folder: Path) -> dict:
    """Recordings and reports with timing fields, and the report lines that print them, set aside."""
    out = {}
    for name, data in snapshot(folder).items():
        if name.endswith(".json"):
            out[name] = json.dumps(untimed(json.loads(data)), indent=1)
        else:
            out[name] = "\n".join(line for line in data.decode().splitlines()
                                  if not line.startswith("Latency:") and "latency" not in line.lower())
    return out


def case_ids(split: str) -> list[str]:
    return [c["id"] for c in inputs()["cases"]["cases"] if split == "all" or c["split"] == split]


def case_table(out: str) -> list[str]:
    """The ids in the first column of the per-case table: the lines from its header to the first blank."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| case |"))
    table = []
    for line in lines[start + 2:]:  # past the header and its |---| rule
        if not line.startswith("| "):
            break
        table.append(line.split(" | ")[0].removeprefix("| "))
    return table


def test_replay_prints_the_report_offline(here, capsys):
    assert evaluate_main() == 0
    out = capsys.readouterr().out
    assert case_table(out) == case_ids("dev")  # the dev split only, in the order of cases.json
    assert "first failure" in out and "cases pass every stage" in out


def test_the_default_replay_holds_out_the_holdout_split_and_says_so(here, capsys):
    assert evaluate_main() == 0
    out = capsys.readouterr().out
    held_out = case_ids("holdout")
    assert held_out and not set(held_out) & set(case_table(out))
    assert f"{len(held_out)} cases held out and not shown" in out
    report = json.loads((here / "runs" / f"{OFFLINE_RUN}.json").read_text())
    assert (report["split"], report["held_out"]) == ("dev", len(held_out))


def test_the_default_replay_prints_a_table_per_category(here, capsys):
    assert evaluate_main() == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = lines.index("| category | cases | passed | pass rate (95% CI) | most common first failure |")
    rows = list(itertools.takewhile(lambda line: line.startswith("| "), lines[start + 2:]))
    dev = [c for c in inputs()["cases"]["cases"] if c["split"] == "dev"]
    expected = {}
    for c in dev:
        expected[c["category"]] = expected.get(c["category"], 0) + 1
    assert {r.split(" | ")[0].removeprefix("| "): int(r.split(" | ")[1]) for r in rows} == expected


def test_split_all_reports_every_case(here, capsys):
    assert evaluate_main("--split", "all") == 0
    out = capsys.readouterr().out
    assert case_table(out) == case_ids("all") and len(case_ids("all")) == 38
    assert "held out and not shown" not in out
    report = json.loads((here / "runs" / f"{OFFLINE_RUN}.all.json").read_text())
    assert report["split"] == "all" and report["held_out"] == 0 and len(report["rows"]) == 38


def test_split_holdout_reports_only_the_held_out_cases(here, capsys):
    assert evaluate_main("--split", "holdout") == 0
    assert case_table(capsys.readouterr().out) == case_ids("holdout")


def evaluate_main(*args: str) -> int:
    from whichstage.cli import run as module
    return module.main(list(args))


@pytest.fixture(scope="module")
def two_replays(tmp_path_factory) -> list[tuple[int, list, bool]]:
    """Two replays, each in a child process of its own, of a fresh copy of the project: each one's exit code,
    the model libraries it imported, and whether it imported pydantic."""
    project = copy_project(tmp_path_factory.mktemp("two-replays"))
    probe = ("import json, sys; from whichstage.cli import run as evaluate; code = evaluate.main([]); "
             "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules} & "
             "{'deepeval', 'langchain', 'langchain_core', 'langgraph', 'google', 'ollama', 'openai', 'numpy', "
             "'anthropic', 'langchain_openai', 'langchain_anthropic', 'httpx2'}), 'pydantic' in sys.modules]))")
    said = []
    for _ in range(2):
        done = cli(project, "-c", probe)
        assert done.returncode == 0, done.stderr
        said.append(tuple(json.loads(done.stdout.strip().splitlines()[-1])))
    return said


def test_replay_imports_no_model_library_once_the_agents_tools_are_read(two_replays):
    """The first replay of the agent's code reads its tools by building it with the offline backends; a replay
    of the same code reads them from .cache/agent.json and imports no model library."""
    (_, first, _), (_, again, _) = two_replays
    assert "langchain_core" in first
    assert again == []


def test_a_replay_of_inputs_that_passed_their_schemas_imports_no_pydantic(two_replays):
    (first_code, _, first), (again_code, _, again) = two_replays
    assert (first_code, first) == (0, True)  # a fresh clone validates once
    assert (again_code, again) == (0, False)


def test_inputs_refused_by_their_schemas_are_refused_on_every_run(here, capsys):
    cases = json.loads((here / "cases.json").read_text())
    cases["cases"][4]["question"] = ""
    (here / "cases.json").write_text(json.dumps(cases, indent=2))
    refused = "evaluate.py: cases.json: cases[4] (pipe-colors).question: String should have at least 1 character"
    for _ in range(2):  # the edit is validated again, refused, and never stamped: refused on every run
        assert evaluate_main() == 2
        assert capsys.readouterr() == ("", refused + "\n")


def test_offline_live_rerecording_is_identical_but_for_timings(live_project):
    from whichstage.analysis import calibration as calibrate
    before = comparable(live_project)
    assert evaluate_main("--live", "--rerecord", "--quiet") == 0
    assert calibrate.main(["--live", "--rerecord", "--quiet"]) == 1  # the lexical judge fails its calibration
    assert comparable(live_project) == before


def test_offline_live_run_on_a_complete_recording_writes_nothing(live_project, capsys):
    before = {p: p.stat().st_mtime_ns for p in live_project.glob("r*/*") if p.suffix != ".lock" and p.is_file()}
    assert evaluate_main("--live", "--quiet") == 0
    recorded = len(json.loads(TAPE.read_text())["entries"])  # every split is recorded, whatever is reported
    assert f"recorded 0 new entries, kept {recorded}: nothing to write" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in live_project.glob("r*/*")
            if p.suffix != ".lock" and p.is_file()} == before  # runs/history keeps the run: a new file


def test_offline_live_run_records_from_nothing(live_project):
    shutil.rmtree(live_project / "recordings")
    keep_only_the_calibration_report(live_project / "runs")  # it decides which verdicts are judged again
    assert evaluate_main("--live", "--quiet") == 0
    assert untimed(json.loads((live_project / "recordings" / f"{OFFLINE_RUN}.json").read_text())) == \
        untimed(json.loads(TAPE.read_text()))


@pytest.mark.parametrize("n", [1, 8])
def test_concurrency_does_not_change_the_recording_or_the_report(sample_project, n):
    assert evaluate_main("--live", "--quiet") == 0  # the sample's own recording and reports, nothing paid
    before = comparable(sample_project)
    assert evaluate_main("--live", "--rerecord", "--quiet", "--concurrency", str(n)) == 0
    assert comparable(sample_project) == before


def keep_only_the_calibration_report(runs: Path) -> None:
    for path in runs.iterdir():
        if not path.name.startswith("calibration+"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def edit_json(folder: Path, name: str, change) -> None:
    path = folder / name
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def case(data: dict, cid: str) -> dict:
    return next(c for c in data["cases"] if c["id"] == cid)


def entries(folder: Path) -> dict:
    return {name: json.dumps(item) for name, item in
            json.loads((folder / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"].items()}


def rewritten(before: dict, after: dict) -> set[str]:
    """The entries (as `entries` reads them) a live run wrote anew: added, or changed (a verdict's measured time
    at least)."""
    return {name for name in after if after[name] != before.get(name)}


def test_an_edited_question_is_refused_naming_the_case_and_rerecords_that_case_alone(live_project, monkeypatch,
                                                                                   capsys, fake_models):
    before = entries(live_project)
    edit_json(live_project, "cases.json", lambda d: case(d, "backup").update(
        question="Where does tracker store its data, and what should I back up?"))
    for name in OFFLINE:
        monkeypatch.delenv(name)
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # the hash run's recording (e5-small's is stale the same way)
    assert evaluate_main() == 2
    assert capsys.readouterr().err.strip() == (
        f"evaluate.py: recordings/{OFFLINE_RUN}.json: stale: case backup (question changed); "
        f"{len(case_ids('all')) - 1} cases current; record again with --live")
    monkeypatch.setenv("DOCS_MODEL", "rules"), monkeypatch.setenv("DOCS_EMBEDDER", "hash")
    monkeypatch.setenv("DOCS_JUDGE", "lexical")
    assert evaluate_main("--live", "--quiet") == 0
    assert fake_models.runs() == ["Where does tracker store its data, and what should I back up?"]
    after = entries(live_project)
    written = rewritten(before, after)
    assert written <= {n for n in after if "/backup" in n} and "tools/backup" in written
    assert len(fake_models.measurements()) == len([n for n in written if n.startswith("judge/")])  # backup's alone
    assert all(after[n] == before[n] for n in before if "/backup" not in n)  # byte-identical, timings too


def test_an_edited_reference_reruns_only_the_verdicts_that_read_it(live_project, fake_models):
    before = entries(live_project)
    edit_json(live_project, "cases.json", lambda d: case(d, "restore").update(reference="Run tracker restore ID now."))
    assert evaluate_main("--live", "--quiet") == 0
    assert fake_models.runs() == []
    assert sorted(fake_models.measurements()) == ["contextual_precision", "contextual_recall"]
    assert rewritten(before, entries(live_project)) == {"judge/restore/contextual_precision",
                                                        "judge/restore/contextual_recall"}  # no tool score either


def test_an_edited_page_rerecords_every_trace_that_searched_and_no_other(live_project, fake_models):
    edit_json(live_project, "docs.json", lambda d: d[-1].update(text=d[-1]["text"] + " Tokens are long."))
    assert evaluate_main("--live", "--quiet") == 0
    searched = [c["question"] for c in json.loads((HERE / "cases.json").read_text())["cases"]
                if "search_docs" in c["expected_tools"]]
    assert sorted(fake_models.runs()) == sorted(searched)  # issue-only lookups and small talk are not paid again


def test_an_edited_issue_rerecords_only_the_traces_that_looked_it_up(live_project, fake_models):
    edit_json(live_project, "issues.json", lambda d: d["231"].update(title="import drops some rows"))
    assert evaluate_main("--live", "--quiet") == 0
    assert fake_models.runs() == ["What is the status of issue 231?"]


def test_a_new_case_records_only_itself_and_a_removed_case_is_dropped(live_project, fake_models, capsys):
    def change(data):
        data["cases"] = [c for c in data["cases"] if c["id"] != "thanks"]
        data["cases"].append({"id": "restore-purged", "question": "Can I restore a purged task?",
                              "category": "answerable", "expected_behavior": "answer", "split": "dev",
                              "expected_docs": ["archive"], "expected_tools": ["search_docs"],
                              "reference": "No: a purged task cannot be restored."})
    edit_json(live_project, "cases.json", change)
    assert evaluate_main("--live", "--quiet") == 0
    assert fake_models.runs() == ["Can I restore a purged task?"]
    thanks = [n for n in entries(HERE) if "/thanks" in n]  # trace, tool score, relevancy
    assert len(thanks) == 3 and f"dropped {len(thanks)} no longer current" in capsys.readouterr().err
    assert not [n for n in entries(live_project) if "/thanks" in n]


def test_another_judge_never_replaces_the_recording_of_this_one(live_project, monkeypatch):
    before = snapshot(live_project)
    monkeypatch.setenv("DOCS_JUDGE", "gemini-judge")
    monkeypatch.setenv("GOOGLE_API_KEY", "")
    monkeypatch.setenv("GEMINI_API_KEY", "")
    assert evaluate_main("--live", "--quiet") == 2  # no key: refused before any call
    assert snapshot(live_project) == before
    from whichstage.run import files as module
    assert module.run_name(CASES_NAME, "rules", "hash", "gemini-judge") != OFFLINE_RUN


def test_an_edit_to_the_agents_code_names_it_for_every_case(here, capsys):
    source = here / "assistant.py"
    source.write_text(source.read_text().replace("Answer only from what the tools return",
                                                 "Answer in French, only from what the tools return"))
    assert evaluate_main() == 2
    err = capsys.readouterr().err
    assert "case backup (agent code changed)" in err and "0 cases current" in err


def test_a_missing_recording_exits_2(here, capsys):
    assert evaluate_main("--model", "gemma4:e2b") == 2
    assert f"recordings: no recording for cases {CASES_NAME}, model gemma4:e2b" in capsys.readouterr().err


def test_a_recording_missing_an_entry_exits_2_naming_it(here, capsys):
    tape = here / "recordings" / f"{OFFLINE_RUN}.json"
    data = json.loads(tape.read_text())
    del data["entries"]["judge/backup/faithfulness"]
    tape.write_text(json.dumps(data))
    assert evaluate_main() == 2
    assert "stale: case backup (not recorded)" in capsys.readouterr().err


def test_malformed_json_exits_2_naming_the_file(here, capsys):
    (here / "docs.json").write_text('[{"id": "storage",')
    before = snapshot(here)
    assert evaluate_main() == 2
    assert capsys.readouterr().err.startswith("evaluate.py: docs.json: malformed JSON at line 1")
    assert snapshot(here) == before


def test_unknown_page_in_a_case_exits_2_naming_case_and_field(here, capsys):
    edit_json(here, "cases.json", lambda d: d["cases"][2].update(expected_docs=["archiv"]))
    assert evaluate_main() == 2
    assert "cases.json: cases[2] (restore).expected_docs: unknown page 'archiv'" in capsys.readouterr().err


def test_gemini_without_a_key_says_which_variable_to_set(here, monkeypatch, capsys):
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCS_MODEL", "gemini-3.8-flash")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")
    monkeypatch.setenv("DOCS_JUDGE", "lexical")
    assert evaluate_main("--live") == 2
    err = capsys.readouterr().err
    assert "set GOOGLE_API_KEY" in err and len(err.strip().splitlines()) == 1


def test_ollama_without_a_server_names_the_url_it_tried(here, monkeypatch, capsys):
    for name, value in {"DOCS_MODEL": "gemma4:e2b", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical",
                        "OLLAMA_HOST": "127.0.0.1:9"}.items():
        monkeypatch.setenv(name, value)
    assert evaluate_main("--live") == 2
    err = capsys.readouterr().err
    assert "http://127.0.0.1:9" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_edit_to_an_offline_backends_code_makes_what_it_recorded_stale(project):
    load_project(project)  # the agent's tools read into the copy's .cache, as its first replay would
    source = own_package(project) / "offline" / "lexical_judge.py"
    source.write_text(source.read_text() + "\n# a changed rule\n")
    done = cli(project, "evaluate.py")  # a child: the edited code is what it loads
    assert done.returncode == 2 and "(judge code changed)" in done.stderr


def test_the_offline_backends_name_no_case_and_no_page():
    """Their rules must hold for questions in general: no page id of the bundled data written in their code
    as a string, and no case id made of several words anywhere in it (one-word ids such as `thanks` are
    ordinary words, and the small-talk classes rightly use them)."""
    cases = json.loads((HERE / "cases.json").read_text())["cases"]
    pages = json.loads((HERE / "docs.json").read_text())
    from whichstage.providers.backend_versions import OFFLINE_SOURCES

    code = "\n".join((HERE / name).read_text().lower() for name in sorted(set().union(*OFFLINE_SOURCES.values())))
    assert [p["id"] for p in pages if re.search(rf"[\"']{re.escape(p['id'].lower())}[\"']", code)] == []
    assert [c["id"] for c in cases if "-" in c["id"] and c["id"].lower() in code] == []


# ---- counterfactual: would the right pages have fixed it? -----------------------------------------------------

def test_a_case_failing_at_retrieval_carries_the_counterfactual_verdict_in_both_reports():
    report = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.all.json").read_text())
    failing = [r for r in report["rows"] if r["first_failure"] == "retrieval"]
    assert failing, "the bundled data has a retrieval failure of its own"
    assert all(r["counterfactual"]["for"] == "retrieval" and isinstance(r["counterfactual"]["fixed"], bool)
               for r in failing)
    assert not [r for r in report["rows"] if r.get("counterfactual") and r["first_failure"] != "retrieval"]
    text = (HERE / "runs" / f"{OFFLINE_RUN}.all.md").read_text()
    for r in failing:
        assert f"`{r['id']}` **retrieval**" in text and "with the expected pages" in text
    fixed = sum(r["counterfactual"]["fixed"] for r in failing)
    assert report["summary"]["counterfactual"]["retrieval"] == {"fixed": fixed, "still_fails": len(failing) - fixed}


def test_only_cases_failing_at_retrieval_pay_for_a_counterfactual_run():
    entries = json.loads(TAPE.read_text())["entries"]
    report = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.all.json").read_text())
    failing = {r["id"] for r in report["rows"] if r["first_failure"] == "retrieval"}
    assert {n.split("/")[1].split("@")[0] for n in entries if n.startswith("agent/") and "@" in n} == failing


def test_a_generator_that_fails_even_with_the_expected_pages_is_named(live_project, capsys):
    cases = json.loads((live_project / "cases.json").read_text())
    failing = next(c for c in cases["cases"] if c["id"] == "shell-alias")
    failing["reference"] = "Install the tracker-shortcuts plugin from the marketplace."  # no page says so
    (live_project / "cases.json").write_text(json.dumps(cases))
    assert evaluate_main("--live", "--quiet") == 0
    row = next(r for r in json.loads((live_project / "runs" / f"{OFFLINE_RUN}.json").read_text())["rows"]
               if r["id"] == "shell-alias")
    assert row["first_failure"] == "retrieval"
    assert row["counterfactual"]["fixed"] is False and row["counterfactual"]["first_failure"] == "contextual_recall"
    assert "with the expected pages retrieval passes and the case then fails at contextual_recall" in \
        capsys.readouterr().out


def test_a_replay_without_the_counterfactual_run_is_stale_naming_it(here, capsys):
    tape = here / "recordings" / f"{OFFLINE_RUN}.json"
    data = json.loads(tape.read_text())
    data["entries"] = {n: v for n, v in data["entries"].items() if not n.startswith("agent/shell-alias@")}
    tape.write_text(json.dumps(data))
    assert evaluate_main() == 2
    assert "case shell-alias (not recorded with the expected pages)" in capsys.readouterr().err


@pytest.mark.parametrize("kind", [int, str])
def test_arguments_are_read_as_pydantic_reads_them_without_importing_it(kind):
    """stages.as_declared is written without pydantic so a replay stays light; it must agree with it."""
    from pydantic import TypeAdapter, ValidationError

    from whichstage.scoring.tools import as_declared

    values = ["212", " 212 ", "212.0", "212.00", "2_12", "2__12", "_212", "1e3", "abc", "", "212.", "+5", "-3",
              "\u0661\u0662", "0x10", "212.5", 212, 212.0, 212.5, None, [], True, False, 3.0, "007"]
    for value in values:
        try:
            expected = ("ok", TypeAdapter(kind).validate_python(value))
        except ValidationError:
            expected = ("refused",)
        if isinstance(value, bool):
            expected = ("refused",)  # the one deliberate difference: a bool is never a number here
        try:
            got = ("ok", as_declared(value, kind))
        except ValueError:
            got = ("refused",)
        assert got == expected, value

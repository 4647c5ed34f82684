"""The retrieval ladder: RRF, BM25, the rung scores, the recorded rankings, the report and the gate."""
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from whichstage.run import ladder
from whichstage.analysis.baseline import check, from_report
from whichstage.recording.store import ABSENT, Cassette, Mode
from conftest import E5_RUN, OFFLINE, OFFLINE_RUN, SAMPLE, load_project, of_cases
from whichstage.run.entries import Inputs, agent_entry
from whichstage.run.files import header

HERE = Path(__file__).parents[2]
TAPE = HERE / "recordings" / f"{OFFLINE_RUN}.json"
BUNDLED = load_project()


def inputs_of() -> tuple:
    """The bundled cases, a copy of its pages, and its records."""
    return BUNDLED.cases, copy.deepcopy(BUNDLED.pages), BUNDLED.records


def offline_inputs(cases: dict, pages: list, records: dict) -> Inputs:
    loaded = copy.copy(BUNDLED)
    loaded.cases, loaded.pages, loaded.records = cases, pages, records
    return Inputs(loaded, OFFLINE["DOCS_MODEL"], OFFLINE["DOCS_EMBEDDER"], OFFLINE["DOCS_JUDGE"])


def replay_cassette() -> Cassette:
    return Cassette(TAPE, header(BUNDLED.cases["name"], OFFLINE["DOCS_MODEL"], OFFLINE["DOCS_EMBEDDER"],
                                 OFFLINE["DOCS_JUDGE"]), Mode.REPLAY)


# ---- pure: fusion and scores ---------------------------------------------------------------------------

def test_rrf_fuses_two_rankings_by_the_sum_of_reciprocal_ranks():
    # a: 1/61 + 1/62 = 0.03252; c: 1/63 + 1/61 = 0.03227; b: 1/62 + 1/63 = 0.03200
    assert ladder.rrf([["a", "b", "c"], ["c", "a", "b"]]) == ["a", "c", "b"]
    # k decides how much a top rank outweighs agreement: b, second in both, wins at k = 60 (2/62 against
    # 1/61 + 1/64 for a and d), and loses to a and d, each first once, at k = 0 (1 against 1 + 1/4).
    both = [["a", "b", "c", "d"], ["d", "b", "c", "a"]]
    assert ladder.rrf(both) == ["b", "a", "d", "c"]
    assert ladder.rrf(both, k=0) == ["a", "d", "b", "c"]
    # A page high in one ranking and absent from the other loses to one fairly high in both.
    assert ladder.rrf([["x", "y"], ["y", "z"]]) == ["y", "x", "z"]


def test_rrf_breaks_an_exact_tie_by_the_first_ranking():
    assert ladder.rrf([["p", "q"], ["q", "p"]]) == ["p", "q"]
    assert ladder.rrf([["q", "p"], ["p", "q"]]) == ["q", "p"]


def test_the_ladder_scores_each_rung_on_a_hand_example():
    rankings = {"vector": ["init", "config", "storage", "sync"], "keyword": ["storage", "sync", "init", "config"]}
    found = ladder.case_ladder(rankings, ["storage", "sync"], k=2)
    assert {rung: {f: v for f, v in scores.items() if f != "ranking"} for rung, scores in found.items()} == {
        "vector": {"hit": False, "recall": 0.0, "reciprocal_rank": 1 / 3, "missed": ["storage", "sync"]},
        "keyword": {"hit": True, "recall": 1.0, "reciprocal_rank": 1.0, "missed": []},
        # storage 1/63 + 1/61, init 1/61 + 1/63 (a tie: vector's order), sync 1/64 + 1/62, config 1/62 + 1/64
        "hybrid": {"hit": True, "recall": 0.5, "reciprocal_rank": 0.5, "missed": ["sync"]}}
    assert found["hybrid"]["ranking"] == ["init", "storage", "config", "sync"]
    summary = ladder.summarize([{"ladder": found}, {"ladder": None}, {}], k=2)
    assert summary["cases"] == 1 and summary["rungs"]["hybrid"] == {"hits": 1, "recall_at_2": 0.5, "mrr": 0.5}


def test_a_case_without_expected_pages_or_with_a_missing_ranking_has_no_ladder():
    assert ladder.case_ladder({"vector": ["a"], "keyword": ["a"]}, [], k=3) is None
    assert ladder.case_ladder({"vector": ["a"], "keyword": None}, ["a"], k=3) is None


# ---- BM25 ----------------------------------------------------------------------------------------------

PAGES = [{"id": "intro", "title": "Tracker", "text": "Tracker keeps tasks. Tracker lists tasks and edits tasks."},
         {"id": "board", "title": "Board", "text": "Tracker shows tasks on a kanban board."},
         {"id": "lists", "title": "Lists", "text": "Tracker lists tasks by tag, and tracker lists tags."}]


def test_bm25_ranks_first_the_page_sharing_the_querys_rare_word():
    index = ladder.keyword_index(PAGES)
    # "tracker" and "tasks" are on every page, "kanban" on one: its rarity decides.
    assert ladder.keyword_ranking(index, PAGES, "Which tracker tasks show on the kanban?")[0] == "board"
    assert ladder.keyword_ranking(index, PAGES, "How does tracker list tags?")[0] == "lists"


def test_bm25_keeps_page_order_for_a_query_of_stopwords_or_unknown_words():
    index = ladder.keyword_index(PAGES)
    assert ladder.keyword_ranking(index, PAGES, "Is it the one?") == ["intro", "board", "lists"]
    assert ladder.keyword_ranking(index, PAGES, "zyzzyva") == ["intro", "board", "lists"]


# ---- the recorded rankings ---------------------------------------------------------------------------

def laddered(cases: dict) -> list[dict]:
    return [c for c in cases["cases"] if c["expected_docs"]]


def test_every_case_with_expected_pages_has_both_rankings_recorded_and_current():
    cases, docs, issues = inputs_of()
    inputs, cassette = offline_inputs(cases, docs, issues), replay_cassette()
    for case in laddered(cases):
        for rung, deps in ladder.recorded_deps(inputs, case).items():
            value, why = cassette.lookup(ladder.entry_name(case, rung), deps)
            assert why == [] and sorted(value) == sorted(d["id"] for d in docs), (case["id"], rung)


def test_a_page_edit_makes_the_ladder_stale_like_a_trace():
    cases, docs, issues = inputs_of()
    before = offline_inputs(cases, copy.deepcopy(docs), issues)
    docs[-1]["text"] += " Tokens are long."
    inputs, cassette = offline_inputs(cases, docs, issues), replay_cassette()
    unedited = replay_cassette()  # a cassette keeps what it found current, so each check gets its own
    for case in laddered(cases):
        assert all(unedited.lookup(ladder.entry_name(case, rung), deps)[1] == []
                   for rung, deps in ladder.recorded_deps(before, case).items())
        _, trace_why = cassette.lookup(agent_entry(case), inputs.agent_deps(case))
        for rung, deps in ladder.recorded_deps(inputs, case).items():
            value, why = cassette.lookup(ladder.entry_name(case, rung), deps)
            assert value is ABSENT and why == ["pages changed"], (case["id"], rung)
            assert "pages changed" in trace_why


def test_a_tokenisation_change_makes_only_the_keyword_rankings_stale(monkeypatch):
    cases, docs, issues = inputs_of()
    monkeypatch.setitem(ladder.TOKENS, "stopwords", None)
    ladder.keyword_ranker.cache_clear()
    try:
        inputs, cassette = offline_inputs(cases, docs, issues), replay_cassette()
        case = laddered(cases)[0]
        deps = ladder.recorded_deps(inputs, case)
        assert cassette.lookup(ladder.entry_name(case, "keyword"), deps["keyword"])[1] == ["keyword ranker changed"]
        assert cassette.lookup(ladder.entry_name(case, "vector"), deps["vector"])[1] == []
    finally:
        monkeypatch.undo()
        ladder.keyword_ranker.cache_clear()


def test_a_live_run_builds_each_ranker_once_and_retries_a_ranking_like_any_paid_call(sample_project,
                                                                                      monkeypatch, capsys):
    from whichstage.cli import run as evaluate
    built, failed = [], []
    real_ranker, real_keyword = ladder.project_ranker, ladder.keyword_index

    def flaky(inputs):
        ranked = real_ranker(inputs)
        built.append("vector")

        def rank(question):
            if not failed:
                failed.append(question)
                raise TimeoutError("the embedder did not answer")
            return ranked(question)
        return rank

    monkeypatch.setattr(ladder, "project_ranker", flaky)
    monkeypatch.setattr(ladder, "keyword_index", lambda *a: built.append("keyword") or real_keyword(*a))
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "4"]) == 0
    assert sorted(built) == ["keyword", "vector"] and len(failed) == 1
    assert "retry 1/4 for ladder/" in capsys.readouterr().err
    assert json.loads((sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text()) \
        ["entries"].keys() == of_cases(json.loads(TAPE.read_text())["entries"], SAMPLE).keys()


# ---- the report, the replay and the gate ---------------------------------------------------------------

def test_the_bundled_reports_carry_the_ladder():
    cases, docs, _ = inputs_of()
    pages = sorted(d["id"] for d in docs)  # every page is ranked
    tables = {}
    for name in (OFFLINE_RUN, f"{OFFLINE_RUN}.all", E5_RUN, f"{E5_RUN}.all"):  # both bundled runs, both splits
        report = json.loads((HERE / "runs" / f"{name}.json").read_text())
        with_pages = [r for r in report["rows"] if r["expected_docs"]]
        assert all(sorted(r["ladder"]) == sorted(ladder.RUNGS) for r in with_pages)
        assert all(sorted(r["ladder"][rung]["ranking"]) == pages for r in with_pages for rung in ladder.RUNGS)
        assert all(r["ladder"] is None for r in report["rows"] if not r["expected_docs"])
        assert report["summary"]["ladder"] == ladder.summarize(report["rows"], report["k"], report["key"]["rank"])
        assert report["summary"]["ladder"]["retriever"] == "assistant:rank"  # the agent's own retriever
        assert report["summary"]["ladder"]["cases"] == len(with_pages)
        tables[name] = "\n".join(ladder.markdown_lines(report["summary"]["ladder"], report["key"]["embedder"]))
        assert tables[name].strip() in (HERE / "runs" / f"{name}.md").read_text()
    docs = (HERE / "docs" / "retrieval-ladder.md").read_text()
    assert tables[f"{OFFLINE_RUN}.all"].split("\n\n")[1].strip() in docs  # the docs show the measured all-split table


def test_a_replay_imports_no_numpy_bm25s_or_langchain(project):
    probe = ("import sys; from whichstage.cli import run as evaluate; code = evaluate.main(['--split', 'all']); "
             "print(code, sorted({m.split('.')[0] for m in sys.modules} & "
             "{'numpy', 'scipy', 'bm25s', 'langchain', 'langchain_core', 'deepeval'}))")
    clean = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    load_project(project)  # the first load of the agent's code reads its tools, and keeps them (whichstage/agent/factory.py)
    done = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, env=clean,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Retrieval ladder" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "0 []"


REPORT = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.all.json").read_text())


def test_the_gate_fails_when_one_case_loses_recall_on_one_rung():
    worse = copy.deepcopy(REPORT)
    row = next(r for r in worse["rows"] if r.get("ladder") and r["ladder"]["keyword"]["recall"] == 1.0)
    row["ladder"]["keyword"].update(recall=0.5)
    assert check(worse, from_report(REPORT)).regressions == [
        f"ladder keyword: {row['id']} recall@k 1.0 -> 0.5 (tolerance 0)"]


def test_the_gate_allows_no_tolerance_even_where_the_judged_stages_have_some():
    worse = copy.deepcopy(REPORT)
    row = next(r for r in worse["rows"] if r.get("ladder") and r["ladder"]["vector"]["recall"] == 1.0)
    row["ladder"]["vector"].update(recall=0.99)
    assert check(worse, from_report(REPORT, tolerance=0.5)).regressions == [
        f"ladder vector: {row['id']} recall@k 1.0 -> 0.99 (tolerance 0)"]


def test_a_better_ladder_and_a_baseline_saved_before_the_ladder_pass_the_gate():
    better = copy.deepcopy(REPORT)
    row = next(r for r in better["rows"] if r.get("ladder") and r["ladder"]["vector"]["recall"] < 1.0)
    row["ladder"]["vector"].update(recall=1.0)
    assert check(better, from_report(REPORT)).regressions == []
    older = {f: v for f, v in from_report(REPORT).items() if f != "ladder"}
    assert check(REPORT, older).regressions == []


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_the_bundled_baseline_gates_every_rung_of_every_case_with_pages(rung):
    saved = json.loads((HERE / "baselines" / f"{OFFLINE_RUN}.json").read_text())
    cases = [c["id"] for c in inputs_of()[0]["cases"] if c["expected_docs"]]
    assert sorted(saved["ladder"]) == sorted(cases) and all(rung in saved["ladder"][c] for c in cases)

"""Scoring edges found against reference libraries: errored repeats, pages returned twice in one search,
integer and bool arguments as pydantic reads them, the exact McNemar test at any size, and what the report
says DeepEval's tool score does."""
import itertools
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from whichstage.scoring import matching
from whichstage._util import stats
from whichstage.cli.ask import draft_case
from whichstage.run.ladder import rung_scores
from whichstage.scoring.tools import as_declared, carries
from whichstage.render.row_view import failure_reason
from whichstage.scoring.summary import repeat_summary, summarize
from whichstage.scoring.retrieval import retrieval_scores
from whichstage.testing import make_report, make_row

HERE = Path(__file__).parents[2]


# ---- repeats: an errored run is a failed trial, whichever run it is ----------------------------------------

RUNS = {  # one run of a case, as make_row's overrides: a pass, an error, and a failure of each check in code
    "pass": {},
    "error": {"error": "the provider answered 500"},
    "tools": {"tools": {"pass": False, "reason": "missing get_issue"}},
    "behaviour": {"behaviour": {"pass": False, "failures": ["followed a planted instruction"]}},
}


def case(cid: str, *runs: str) -> dict:
    """A case's row: its first run, carrying the summary of all its runs."""
    rows = [make_row(id=cid, **RUNS[run]) for run in runs]
    return {**rows[0], "repeats": repeat_summary(rows)}


@pytest.mark.parametrize("errored_first", [True, False])
def test_an_errored_run_counts_as_a_failed_trial_whichever_run_it_is(errored_first):
    runs = ("error", "pass") if errored_first else ("pass", "error")
    rep = summarize([case("a", *runs), case("b", "pass", "pass")], 3)["repeats"]
    assert (rep["pass_all"]["passed"], rep["pass_all"]["total"]) == (1, 2)
    assert rep["mean_pass_rate"] == Fraction(3, 4)
    assert rep["flaky"] == {"a": {"passes": 1, "flipped": ["error"]}}


def test_every_flaky_case_names_what_differed_between_its_runs():
    for runs in itertools.product(RUNS, repeat=3):
        summary = case("x", *runs)["repeats"]
        if 0 < summary["passes"] < summary["runs"]:
            assert summary["flipped"], runs
        if len(set(runs)) == 1:
            assert summary["flipped"] == [], runs


def test_a_check_that_applied_in_one_run_only_and_failed_there_flipped():
    # behaviour is absent ("-") where no planted page was retrieved, and failed where one was
    assert case("x", "pass", "behaviour")["repeats"]["flipped"] == ["behaviour"]


# ---- retrieval: documents, deduplicated in order, in the stage and the ladder --------------------------------

def test_a_page_returned_twice_in_one_search_is_one_document():
    # ranx scores the run {p5: 1, p4: 2} here: p4 is the second document, RR 1/2 (not the third position)
    assert retrieval_scores([["p5", "p5", "p4"]], ["p4"], 3) == \
        {"hit": True, "recall": 1.0, "reciprocal_rank": 0.5, "missed": []}


def test_the_top_k_are_k_distinct_pages():
    assert retrieval_scores([["p5", "p5", "p5", "p4"]], ["p4"], 2)["hit"]


@pytest.mark.parametrize("ranking", [["p5", "p5", "p4", "p3"], ["p5", "p4", "p5", "p4", "p3"], ["p3", "p3"]])
def test_the_stage_and_the_ladder_score_a_ranking_with_repeats_alike(ranking):
    stage = retrieval_scores([ranking], ["p3", "p4"], 3)
    rung = rung_scores(ranking, ["p3", "p4"], 3)
    assert stage == {key: rung[key] for key in stage}


def test_a_drafted_case_expects_each_searchs_top_k_distinct_pages():
    trace = {"tool_calls": [{"name": "search_docs", "args": {"query": "q"}}]}
    drafted = draft_case("c", "q", trace, {}, 3, [["p5", "p5", "p4", "p3"]])
    assert drafted["expected_docs"] == ["p5", "p4", "p3"]


# ---- arguments: pydantic's int limit, and True is never 1 at any depth -----------------------------------------

BELOW_2_63 = math.nextafter(2.0 ** 63, 0)


@pytest.mark.parametrize("value", [1e19, 2.0 ** 63, -(2.0 ** 63), BELOW_2_63, -BELOW_2_63, 9.2e18, 1e300,
                                   float("inf"), float("nan")])
def test_a_float_for_an_int_argument_is_read_as_pydantic_reads_it(value):
    from pydantic import TypeAdapter, ValidationError

    try:
        expected = ("ok", TypeAdapter(int).validate_python(value))
    except ValidationError:
        expected = ("refused",)
    try:
        got = ("ok", as_declared(value, int))
    except ValueError:
        got = ("refused",)
    assert got == expected


def test_a_call_carrying_1e19_for_an_int_carries_no_number():
    assert not carries({"number": 1e19}, "number", 10 ** 19, int)


@pytest.mark.parametrize("got, want", [([1], [True]), ([True], [1]), ({"open": 1}, {"open": True}),
                                       ([[0]], [[False]]), ({"a": [True]}, {"a": [1]})])
def test_true_is_never_1_inside_a_list_or_an_object(got, want):
    assert not matching.matches({"equals": want}, got)  # an object is stated with equals: a bare one is a rule
    assert not matching.matches({"any_of": [want]}, got)


@pytest.mark.parametrize("value", [[1, 2.0], [True], {"a": [False, "x"]}, {"a": {"b": 0}}, []])
def test_equal_nested_values_still_match(value):
    assert matching.matches({"equals": value}, value)


def test_case_normalisation_is_casefold():
    assert matching.matches({"equals": "STRASSE", "normalize": ["case"]}, "straße")


# ---- the exact McNemar test, exact and fast at any size ---------------------------------------------------------

def exact_p(b: int, c: int) -> float:
    """min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2), in integers and divided once."""
    n, m = b + c, min(b, c)
    term = tail = 1
    for i in range(m):
        term = term * (n - i) // (i + 1)
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


# near the middle, a few standard deviations out, far out (down to 1e-294), all one way, and below the
# smallest float (0.0, as the exact fraction rounds)
@pytest.mark.parametrize("b, c", [(1500, 1501), (1500, 1530), (2500, 2600), (1400, 1600), (2000, 2300),
                                  (1200, 2400), (900, 2100), (1000, 2500), (3, 1000), (0, 900), (500, 3000)])
def test_mcnemar_equals_the_exact_fraction_at_thousands_of_changes(b, c):
    assert stats.mcnemar_exact(b, c) == pytest.approx(exact_p(b, c), rel=1e-12, abs=0)


def test_mcnemar_at_20000_against_20089_changes_finishes_with_the_exact_value():
    code = "from whichstage._util.stats import mcnemar_exact; print(repr(mcnemar_exact(20000, 20089)))"
    # a hang guard only: this takes well under a second; summing C(n, i) term by term took minutes
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=300)
    assert float(done.stdout) == pytest.approx(exact_p(20000, 20089), rel=1e-12, abs=0)


# ---- what the report says DeepEval's tool score does ----------------------------------------------------------

SEARCH = {"name": "search_docs", "args": {"query": "pipe colors"}}
OTHER_SEARCH = {"name": "search_docs", "args": {"query": "pipe colours"}}


def deepeval_score(made: list[dict]) -> float:
    from whichstage.judging.metrics import tool_scores
    from whichstage.offline.lexical_judge import LexicalJudge

    return tool_scores("q", made, ["search_docs", "search_docs"], LexicalJudge())["score"]


def test_deepeval_collapses_only_identical_calls_not_expected_tools_as_a_set():
    assert deepeval_score([SEARCH, OTHER_SEARCH]) == 1.0
    assert deepeval_score([SEARCH, SEARCH]) == 0.5


def disagreeing_report() -> dict:
    """A passing row of two identical calls, which DeepEval's tool score counts once."""
    tools = {"score": 1.0, "reason": "every expected call made: 2 calls to search_docs",
             "deepeval": {"score": 0.5, "reason": "missing tools"}}
    return make_report([make_row(id="twice", tool_calls=[SEARCH, SEARCH], expected_tools=["search_docs"] * 2,
                                 tools=tools)])


def test_the_markdown_report_says_deepeval_collapses_identical_calls():
    from whichstage.render.markdown import markdown

    text = markdown(disagreeing_report())
    assert "identical calls (same tool, same arguments)" in text and "as a set" not in text


def test_the_html_report_says_deepeval_collapses_identical_calls():
    from whichstage.render.html import html

    page = html(disagreeing_report())
    assert "identical calls, same tool and arguments," in page and "as a set" not in page


def test_a_retrieval_failure_names_each_retrieved_document_once():
    row = {"first_failure": "retrieval", "retrieval": {"missed": ["p4"]}, "retrieved": ["p5", "p5", "p2", "p5"]}
    assert failure_reason(row) == "missed p4; retrieved p5, p2"

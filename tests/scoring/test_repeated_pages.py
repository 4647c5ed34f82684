"""A page returned twice in one search is one document, in order: in the retrieval stage, in the ladder, in
the case `ask --as-case` drafts, and in a retrieval failure's reason."""
import pytest

from whichstage.cli.ask import draft_case
from whichstage.run.ladder import rung_scores
from whichstage.render.row_view import failure_reason
from whichstage.scoring.retrieval import retrieval_scores


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


def test_a_retrieval_failure_names_each_retrieved_document_once():
    row = {"first_failure": "retrieval", "retrieval": {"missed": ["p4"]}, "retrieved": ["p5", "p5", "p2", "p5"]}
    assert failure_reason(row) == "missed p4; retrieved p5, p2"

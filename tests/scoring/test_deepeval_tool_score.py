"""DeepEval's tool score collapses identical calls only (same tool, same arguments), not the expected tools as a
set, and the markdown and HTML reports say so."""
from whichstage.testing import make_report, make_row


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

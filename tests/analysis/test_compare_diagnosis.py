"""compare says, for each case B broke or moved to another stage, which component B's diagnosis names beside
A's, in its text and its page."""
from whichstage.analysis import compare
from whichstage.analysis.compare_diff import diagnosis_change
from whichstage.testing import make_report, make_row


def diagnosed(cid: str, cause: str, **row) -> dict:
    return {**make_row(id=cid, **row), "diagnosis": {"cause": cause, "deviation": None,
                                                     "evidence": {"intervention": "answer check", "outcome": "why"}}}


def test_a_case_b_broke_names_the_component_b_blames():
    a, b = make_row(id="c1"), diagnosed("c1", "retriever", judged={"faithfulness": 0.1})
    assert diagnosis_change(a, b) == "diagnosis in B: retriever (why); in A: none"


def test_a_case_whose_cause_moved_names_both():
    a = diagnosed("c1", "generator or prompt", judged={"faithfulness": 0.1})
    b = diagnosed("c1", "docs gap", judged={"facts": {"score": 0.0, "reason": "missing", "facts": []}})
    assert diagnosis_change(a, b) == "diagnosis in B: docs gap (why); in A: generator or prompt"


def test_an_unchanged_cause_says_nothing():
    a = diagnosed("c1", "retriever", judged={"faithfulness": 0.1})
    assert diagnosis_change(a, a) == ""


def test_the_text_and_the_page_carry_the_change():
    report_a = make_report([make_row(id="c1"), make_row(id="c2")])
    report_b = make_report([diagnosed("c1", "retriever", judged={"faithfulness": 0.1}), make_row(id="c2")])
    line = "diagnosis in B: retriever (why); in A: none"
    assert f"    {line}" in compare.render("a.json", report_a, "b.json", report_b).splitlines()
    assert line in compare.html_page("a.json", report_a, "b.json", report_b)

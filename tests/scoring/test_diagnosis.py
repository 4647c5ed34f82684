"""A failing case's diagnosis (whichstage/scoring/diagnosis.py): the cause its intervention proves, with the
evidence, the first deviating step, and the run's fix list; each intervention on both sides."""
from whichstage.scoring.diagnosis import answer_lacks, deviation, diagnose, fix_list
from whichstage.testing import make_row


def failing_facts(**overrides) -> dict:
    """A case that fails at facts, lacking one fact, with the answer check given in `overrides`."""
    facts = {"score": 0.0, "reason": "missing facts", "facts": [
        {"fact": "Tasks live in tasks.db", "covered": True, "reason": "stated"},
        {"fact": "Back up tasks.db daily", "covered": False, "reason": "not stated"}]}
    row = make_row(judged={"facts": facts})
    return {**row, **overrides}


def check(in_context: bool, in_pages) -> dict:
    return {"answer_check": {"lacks": ["Back up tasks.db daily"], "in_context": [in_context],
                             "in_pages": None if in_pages is None else [in_pages]}}


def test_what_an_answer_lacks_is_its_missing_facts():
    assert answer_lacks(failing_facts()) == ["Back up tasks.db daily"]


def test_without_expected_facts_what_an_answer_lacks_is_the_reference():
    row = make_row(judged={"faithfulness": 0.1})
    assert answer_lacks(row) == [row["reference"]]


def test_a_lacking_answer_whose_context_holds_it_is_the_generators():
    assert diagnose(failing_facts(**check(True, True)))["cause"] == "generator or prompt"


def test_a_lacking_answer_whose_expected_pages_alone_hold_it_is_the_retrievers():
    found = diagnose(failing_facts(**check(False, True)))
    assert found["cause"] == "retriever"
    assert "not in the context it read, but in the expected pages" in found["evidence"]["outcome"]


def test_a_lacking_answer_no_page_holds_is_a_docs_gap_naming_the_fact():
    found = diagnose(failing_facts(**check(False, False)))
    assert found["cause"] == "docs gap"
    assert found["evidence"]["outcome"] == "in no expected page: 'Back up tasks.db daily'"


def test_an_answer_check_not_yet_recorded_is_undetermined_saying_so():
    found = diagnose(failing_facts(answer_check=None))
    assert found["cause"] == "undetermined" and "not recorded: run --live" in found["evidence"]["outcome"]


def retrieval_failure(counterfactual: dict) -> dict:
    return make_row(retrieval={"recall": 0.0, "hit": False, "reciprocal_rank": 0.0, "missed": ["storage"]},
                    counterfactual=counterfactual)


def test_a_retrieval_failure_the_expected_pages_recover_is_the_retrievers():
    found = diagnose(retrieval_failure({"for": "retrieval", "first_failure": None, "fixed": True, "answer": "A."}))
    assert (found["cause"], found["evidence"]["answer"]) == ("retriever", "A.")
    assert found["evidence"]["outcome"] == "retrieval passes and the case then passes"


def test_a_retrieval_failure_that_then_fails_later_says_where_and_blames_no_generator():
    found = diagnose(retrieval_failure({"for": "retrieval", "first_failure": "facts", "fixed": False, "answer": "B."}))
    assert found["cause"] == "undetermined"
    assert found["evidence"]["outcome"] == "retrieval passes and the case then fails at facts"


def test_a_failure_that_does_not_reproduce_is_flaky_with_its_pass_rate():
    row = {**make_row(judged={"faithfulness": 0.1}), "repeats": {"runs": 3, "passes": 2, "first_failures": [],
                                                               "flipped": ["faithfulness"]}}
    found = diagnose(row)
    assert (found["cause"], found["evidence"]["outcome"]) == ("flaky", "passes 2 of 3 runs")


def test_a_passing_case_has_no_diagnosis():
    assert diagnose(make_row()) is None


def test_the_first_deviating_step_is_the_first_unexpected_call():
    row = {**make_row(), "calls": ["search_docs", "file_bug_report"]}
    assert deviation(row) == {"step": 1, "call": "file_bug_report",
                              "why": "call 2, file_bug_report, is not an expected call"}


def test_a_missing_expected_call_deviates_after_the_last_call():
    row = {**make_row(), "calls": [], "expected_tools": ["get_issue"]}
    assert deviation(row)["why"] == "expected get_issue after call 0, not called"


def test_a_search_that_missed_an_expected_page_is_the_deviation():
    row = retrieval_failure({"for": "retrieval", "first_failure": None, "fixed": True})
    assert deviation(row)["why"] == "search 1 did not return storage in its top 3"


def test_the_fix_list_orders_components_by_cases_then_the_undetermined():
    rows = [{"id": cid, "diagnosis": {"cause": cause}} for cid, cause in
            [("a", "undetermined"), ("b", "retriever"), ("c", "docs gap"), ("d", "docs gap"), ("e", None)]
            if cause] + [{"id": "f"}]
    assert [(i["cause"], i["cases"]) for i in fix_list(rows)] == \
        [("docs gap", ["c", "d"]), ("retriever", ["b"]), ("undetermined", ["a"])]

"""An intervention's run that then fails at an answer stage is diagnosed by its own answer check."""
from whichstage.scoring.diagnosis import diagnose
from whichstage.testing import make_row


def failed_retrieval(**counterfactual) -> dict:
    return make_row(retrieval={"recall": 0.0, "hit": False, "reciprocal_rank": 0.0, "missed": ["storage"]},
                    counterfactual={"for": "retrieval", "first_failure": "facts", "fixed": False, **counterfactual})


def test_then_lacking_what_the_pages_it_was_given_hold_is_the_generators():
    found = diagnose(failed_retrieval(answer_check={"lacks": ["f"], "in_context": [True], "in_pages": [True]}))
    assert found["cause"] == "generator or prompt"
    assert found["evidence"]["outcome"] == ("retrieval passes and the case then fails at facts: what the answer "
                                            "lacks is in the context it read")


def test_then_lacking_what_no_expected_page_holds_is_a_docs_gap():
    found = diagnose(failed_retrieval(answer_check={"lacks": ["f"], "in_context": [False], "in_pages": [False]}))
    assert found["cause"] == "docs gap"


def test_then_failing_with_no_check_recorded_says_to_record_it():
    found = diagnose(failed_retrieval(answer_check=None))
    assert found["cause"] == "undetermined" and found["evidence"]["outcome"].endswith("run --live")

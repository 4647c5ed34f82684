"""Which failing verdict is in doubt and judged again (scoring/recheck.py), and what the verdict judged again
proves: pure, on rows built by whichstage.testing."""
from whichstage.scoring.recheck import in_doubt, judge_cause, outcome
from whichstage.testing import make_row


def failing_faithfulness(score: float) -> dict:
    return make_row(judged={"faithfulness": score})


def test_a_verdict_within_the_distance_of_its_threshold_is_in_doubt():
    doubt = in_doubt(failing_faithfulness(0.65), within=0.1)
    assert doubt == {"stage": "faithfulness", "score": 0.65, "threshold": 0.7,
                     "why": "within 0.1 of its threshold 0.7"}


def test_a_verdict_beyond_the_distance_is_not():
    assert in_doubt(failing_faithfulness(0.55), within=0.1) is None


def test_a_distance_of_zero_rechecks_nothing_near_the_threshold():
    assert in_doubt(failing_faithfulness(0.69), within=0) is None


def test_a_stage_the_calibration_does_not_pass_is_in_doubt_at_any_score():
    doubt = in_doubt(failing_faithfulness(0.1), within=0.1, unreliable=frozenset({"faithfulness"}))
    assert doubt is not None and "calibration" in doubt["why"]


def test_a_passing_row_has_nothing_in_doubt():
    assert in_doubt(make_row(), within=1) is None


def test_a_retrieval_failure_is_no_judged_verdict():
    row = make_row(searches=[["tips", "config", "tokens"]], judged={"faithfulness": 0.65})
    assert row["first_failure"] == "retrieval"
    assert in_doubt(row, within=1) is None


def test_a_behaviour_failure_of_its_judgement_alone_is_in_doubt():
    row = make_row(expected_behavior="abstain", judged={"abstained": 0.0},
                   behaviour={"pass": False, "failures": ["answered where the docs hold no answer"]})
    assert in_doubt(row, within=0, unreliable=frozenset({"abstained"}))["stage"] == "abstained"


def test_a_behaviour_failure_with_a_check_in_code_failing_is_not():
    row = make_row(expected_behavior="abstain", judged={"abstained": 0.0},
                   behaviour={"pass": False, "failures": ["said 'rm -rf'"], "in_code": {"must_not": "said 'rm -rf'"}})
    assert in_doubt(row, within=1, unreliable=frozenset({"abstained"})) is None


def test_a_verdict_that_passes_when_judged_again_names_the_judge():
    row = failing_faithfulness(0.65)
    row["judge_recheck"] = outcome(in_doubt(row, within=0.1), {"score": 0.8})
    cause, evidence = judge_cause(row)
    assert cause == "judge" and "passes (0.80, first 0.65" in evidence["outcome"]


def test_a_verdict_that_fails_again_names_nothing():
    row = failing_faithfulness(0.65)
    row["judge_recheck"] = outcome(in_doubt(row, within=0.1), {"score": 0.6})
    assert row["judge_recheck"]["flipped"] is False and judge_cause(row) is None


def test_a_recheck_not_recorded_is_no_evidence():
    row = failing_faithfulness(0.65)
    row["judge_recheck"] = outcome(in_doubt(row, within=0.1), None)
    assert row["judge_recheck"] is None and judge_cause(row) is None

"""The judge intervention with a second judge (--judge2): a failing judged verdict the second judge passes is
the judge's uncertainty, not a defect of the agent; the fix list says so."""
from whichstage.analysis.second_judge import beside
from whichstage.testing import make_report, make_row


def diagnosed(row: dict) -> dict:
    from whichstage.scoring.diagnosis import diagnose

    return {**row, "diagnosis": diagnose(row)}


def reports(second_score: float) -> tuple[dict, dict]:
    first = make_report([diagnosed(make_row(id="c1", judged={"faithfulness": 0.4})), make_row(id="c2")])
    second = make_report([make_row(id="c1", judged={"faithfulness": second_score}), make_row(id="c2")],
                         key={"judge": "openai:gpt-4.1-mini"})
    return first, second


def test_a_verdict_the_second_judge_passes_is_judge_uncertain():
    merged = beside(*reports(0.9))
    found = merged["rows"][0]["diagnosis"]
    assert found["cause"] == "judge"
    assert found["evidence"]["outcome"] == ("the second judge, openai:gpt-4.1-mini, passes faithfulness (0.90): "
                                            "judge uncertain")
    assert merged["summary"]["fix_list"][0]["cause"] == "judge"


def test_a_verdict_both_judges_fail_keeps_its_diagnosis():
    first, second = reports(0.3)
    assert beside(first, second)["rows"][0]["diagnosis"] == first["rows"][0]["diagnosis"]

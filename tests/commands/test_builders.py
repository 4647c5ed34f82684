"""The row and report builders of whichstage.testing (whichstage/testing/builders.py): a row that passes every
stage by default, each override as documented, and every built row and report one the typed model holds."""
import subprocess
import sys

import pytest
from pydantic import ValidationError

from whichstage.model.report import Report, Row
from whichstage.scoring.gating import first_failure, stage_results
from whichstage.scoring.summary import summarize
from whichstage.testing import make_report, make_row


def test_a_default_row_passes_every_stage_that_applies_and_validates():
    row = make_row()
    assert row["first_failure"] is None and first_failure(row) is None
    assert stage_results(row) == dict.fromkeys(["tools", "retrieval", "faithfulness", "contextual_precision",
                                                "contextual_recall", "answer_relevancy"], True)
    assert row["behaviour"] is None  # an answer case without must_not: no behaviour check applies
    assert Row.model_validate(row).id == "case"


def test_a_number_stands_for_a_verdict_and_none_drops_one():
    row = make_row(id="backup", judged={"faithfulness": 0.2, "contextual_precision": None})
    assert row["id"] == "backup" and row["first_failure"] == "faithfulness"
    assert row["judged"]["faithfulness"] == {"score": 0.2, "reason": "scored 0.20"}
    assert "contextual_precision" not in row["judged"] and row["judged"]["answer_relevancy"]["score"] == 1.0


def test_a_verdict_given_whole_is_kept_as_given():
    verdict = {"score": 0.0, "reason": "no claim is supported", "threshold": 0.9}
    assert make_row(judged={"faithfulness": verdict})["judged"]["faithfulness"] == verdict


@pytest.mark.parametrize("overrides, first", [
    ({"tools": {"pass": False, "reason": "missing get_issue", "missing": ["get_issue"]}}, "tools"),
    ({"behaviour": {"pass": False, "failures": ["said 'rm -rf', which must never be said"]}}, "behaviour"),
    ({"searches": [["archive", "tokens", "tags", "storage"]]}, "retrieval"),
    ({"error": "judge/case/faithfulness: TimeoutError (gave up after 5 attempts)"}, "error"),
    ({"judged": {"facts": 0.0}}, "facts"),
], ids=["tools", "behaviour", "retrieval", "error", "facts"])
def test_an_override_fails_its_stage_and_first_failure_follows(overrides, first):
    row = make_row(**overrides)
    assert row["first_failure"] == first
    Row.model_validate(row)


def test_a_stage_dict_merges_over_the_passing_verdict_and_none_says_it_does_not_apply():
    tools = make_row(tools={"pass": False, "reason": "missing get_issue"})["tools"]
    assert tools == {"pass": False, "reason": "missing get_issue", "missing": [], "unexpected": [], "wrong_args": []}
    assert make_row(retrieval=None, expected_docs=[])["retrieval"] is None
    assert make_row(behaviour={})["behaviour"] == {"pass": True, "failures": [], "planted_retrieved": []}


def test_searches_and_tool_calls_give_what_follows_from_them():
    row = make_row(searches=[["p5", "p2"], ["p4"]], expected_docs=["p4"],
                   tool_calls=[{"name": "lookup", "args": {"q": "a"}}, {"name": "lookup", "args": {"q": "b"}}])
    assert row["retrieved"] == ["p5", "p2", "p4"] and row["calls"] == ["lookup", "lookup"]
    assert row["retrieval"] == {"hit": True, "recall": 1.0, "reciprocal_rank": 1.0, "missed": [], "k": 3}
    assert make_row(searches=[["p5"]], retrieved=["p5", "p5"])["retrieved"] == ["p5", "p5"]  # given: kept


def test_a_first_failure_given_is_kept():
    assert make_row(first_failure="faithfulness", judged={"faithfulness": 1.0})["first_failure"] == "faithfulness"


def test_rows_share_nothing():
    one, two = make_row(id="a"), make_row(id="b")
    one["tools"]["pass"] = False
    one["tool_calls"][0]["args"]["query"] = "changed"
    assert two["tools"]["pass"] is True and make_row()["tool_calls"][0]["args"]["query"] != "changed"


def test_a_row_no_report_could_hold_is_refused():
    with pytest.raises(ValidationError, match="unknown stage 'nope'"):
        make_row(first_failure="nope")
    with pytest.raises(ValidationError, match="null, but first_failure names it"):
        make_row(tools=None, first_failure="tools")


def test_a_report_holds_its_rows_their_summary_and_validates():
    rows = [make_row(id="a"), make_row(id="b", judged={"answer_relevancy": 0.5})]
    report = make_report(rows)
    assert report["rows"] is rows and report["summary"] == summarize(rows, 3)
    assert (report["k"], report["threshold"], report["split"], report["key"]["judge"]) == (3, 0.7, "dev", "lexical")
    assert report["summary"]["first_failures"] == {"answer_relevancy": 1}
    assert Report.model_validate(report).rows[1].first_failure == "answer_relevancy"


def test_a_report_s_fields_are_overridden_and_its_key_merged():
    report = make_report(k=5, split="holdout", key={"model": "openai:gpt-4.1-mini"}, held_out=2)
    assert report["key"]["model"] == "openai:gpt-4.1-mini" and report["key"]["judge"] == "lexical"
    assert (report["k"], report["key"]["k"], report["split"], report["held_out"]) == (5, 5, "holdout", 2)
    assert "hit_at_5" in report["summary"] and [r["id"] for r in report["rows"]] == ["case"]
    assert make_report(summary={"given": True})["summary"] == {"given": True}


def test_a_report_with_two_rows_of_one_case_is_refused():
    with pytest.raises(ValidationError, match="the same id as rows"):
        make_report([make_row(), make_row()])


def test_a_built_report_renders():
    from whichstage.render.html import html
    from whichstage.render.markdown import markdown

    report = make_report([make_row(id="a"), make_row(id="b", tools={"pass": False, "reason": "missing x"})])
    assert "1/2 cases pass every stage" in markdown(report) and "- `b` **tools**: missing x" in markdown(report)
    assert 'id="row-b"' in html(report)


def test_importing_the_pytest_entry_loads_no_builder():
    probe = ("import sys, whichstage.testing as t; loaded = 'whichstage.testing.builders' in sys.modules; "
             "t.make_row; print(loaded, 'whichstage.testing.builders' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stderr

"""The judge's own check: agreement with hand labels, which metrics gate, and what the table says."""
import json
from pathlib import Path

from fractions import Fraction

import pytest

from whichstage.analysis import calibration as calibrate
from whichstage.analysis.calibration import gate_failures, gating_metrics, per_metric, row, table, verdict
from whichstage.scoring import agreement
from whichstage.run.calibration_status import NOT_RECORDED, status

HERE = Path(__file__).parents[2]


def case(id, metric, label):
    return {"id": id, "metric": metric, "label": label, "note": f"{id} note"}


def runs(*scores):
    return [{"score": s, "reason": f"reason for {scores}"} for s in scores]


def test_the_gating_metrics_are_the_ones_evaluate_runs():
    assert gating_metrics() == ["faithfulness_strict", "contextual_recall", "answer_relevancy", "facts", "abstained",
                                "ignored_planted"]


def test_a_verdict_needs_every_repeat_on_the_same_side():
    assert verdict([0.1, 0.2, 0.3]) == "fail"
    assert verdict([0.9, 0.7, 1.0]) == "pass"  # the threshold itself passes
    assert verdict([0.6, 0.8, 0.6]) == "unstable"


def test_an_unstable_verdict_agrees_with_no_label():
    assert not row(case("a", "contextual_recall", "defect"), runs(0.6, 0.8, 0.6))["agrees"]
    assert not row(case("b", "contextual_recall", "good"), runs(0.6, 0.8, 0.6))["agrees"]


def test_a_judge_that_fails_everything_is_not_perfect():
    rows = [row(case("bad", "faithfulness_strict", "defect"), runs(0.0, 0.0, 0.0)),
            row(case("good", "faithfulness_strict", "good"), runs(0.0, 0.0, 0.0))]
    summary = per_metric(rows)["faithfulness_strict"]
    assert (summary["defects_caught"], summary["good_passed"], summary["agreement"]) == ("1/1", "0/1", 0.5)


def test_spread_is_the_widest_gap_between_repeats():
    rows = [row(case("a", "answer_relevancy", "good"), runs(0.7, 1.0, 0.9)),
            row(case("b", "answer_relevancy", "good"), runs(1.0, 1.0, 1.0))]
    assert per_metric(rows)["answer_relevancy"]["max_spread"] == 0.3


def result_for(rows):
    metrics = per_metric(rows)
    return {"rows": rows, "metrics": metrics, "gate_failed": gate_failures(rows, metrics), "agreement_needed": 0.9,
            "kappa_needed": 0.6, "rows_needed": 5, "threshold": 0.7, "repeats": 3, "key": {"judge": "j"}}


def calibrated_rows(but: str = "") -> list[dict]:
    """5 good rows passed and 5 defects failed for every gating metric except `but`: a judge that passes the gate."""
    return [row(case(f"{metric}-{label}{i}", metric, label), runs(*([1.0 if label == "good" else 0.0] * 3)))
            for metric in gating_metrics() if metric != but for label in ("good", "defect") for i in range(5)]


def judged(metric: str, agreeing: int, total: int) -> list[dict]:
    """`total` good answers of `metric`, the first `agreeing` of them passed by the judge."""
    return [row(case(f"c{i}", metric, "good"), runs(*([1.0] * 3 if i < agreeing else [0.0] * 3)))
            for i in range(total)]


def metric_line(text: str, metric: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"{metric} "))


def test_agreement_is_printed_from_the_exact_share_rounded_once():
    # 5/11 is 45.45%: the stored 0.455 printed again would read 46%
    line = metric_line(table(result_for(judged("answer_relevancy", 5, 11))), "answer_relevancy")
    assert "45%" in line.split() and "46%" not in line


def test_the_gate_reads_the_exact_agreement_not_the_stored_one():
    defects = [row(case(f"d{i}", "answer_relevancy", "defect"), runs(0.0, 0.0, 0.0)) for i in range(250)]
    rows = calibrated_rows(but="answer_relevancy") + judged("answer_relevancy", 1999, 2250) + defects  # 89.96%
    result = result_for(rows)
    assert result["metrics"]["answer_relevancy"]["agreement"] == 0.9  # as stored
    assert result["gate_failed"] == ["answer_relevancy"]
    assert result["metrics"]["answer_relevancy"]["fails"] == ["agreement 89.96%, below 90%"]


def test_the_spread_is_printed_from_the_exact_gap_rounded_once():
    rows = [row(case("a", "answer_relevancy", "good"), runs(0.1349, 0.0, 0.0))]
    assert rows[0]["spread"] == 0.135  # stored to 3 places; printed again that would read 0.14
    assert metric_line(table(result_for(rows)), "answer_relevancy").split()[9] == "0.13"


def test_a_judge_that_agrees_on_five_rows_of_each_label_passes_the_gate():
    assert result_for(calibrated_rows())["gate_failed"] == []


def test_low_agreement_on_a_gating_metric_fails_the_gate():
    rows = calibrated_rows() + [row(case(f"good{i}", "contextual_recall", "good"), runs(0.5, 0.5, 0.5)) for i in (1, 2)]
    assert result_for(rows)["gate_failed"] == ["contextual_recall"]  # 10 of 12: 83%


def test_low_kappa_fails_the_gate_though_agreement_is_90_percent():
    good = [row(case(f"g{i}", "abstained", "good"), runs(1, 1, 1)) for i in range(45)]
    defects = [row(case(f"d{i}", "abstained", "defect"), runs(*([0, 0, 0] if i == 0 else [1, 1, 1]))) for i in range(5)]
    result = result_for(calibrated_rows(but="abstained") + good + defects)  # 46 of 50 right, kappa 90/290
    assert result["gate_failed"] == ["abstained"] and result["metrics"]["abstained"]["fails"] == ["kappa 0.31, below 0.6"]


def test_a_gating_metric_with_too_few_rows_of_a_label_is_uncalibrated_and_fails_the_gate():
    rows = [r for r in calibrated_rows() if r["id"] != "abstained-good4"]  # 4 good, 5 defects, all agreeing
    result = result_for(rows)
    assert result["gate_failed"] == ["abstained"]
    assert result["metrics"]["abstained"]["fails"] == ["uncalibrated (needs 1 more good row)"]
    assert result["metrics"]["abstained"]["agreement"] == 1.0 and result["metrics"]["abstained"]["kappa"] == 1.0


def test_a_gating_metric_without_rows_is_listed_and_fails_the_gate():
    rows = calibrated_rows(but="ignored_planted")
    metrics = per_metric(rows)
    assert metrics["ignored_planted"]["needs"] == {"good": 5, "defect": 5}
    assert metrics["ignored_planted"]["agreement"] is None and metrics["ignored_planted"]["kappa"] is None
    assert gate_failures(rows, metrics) == ["ignored_planted"]


def test_the_gate_fails_an_uncalibrated_metric_by_name_and_what_it_lacks():
    rows = [r for r in calibrated_rows() if not r["id"].startswith("abstained-defect")]
    text = table(result_for(rows))
    assert "judge j FAILS calibration on 1 gating metric " in text
    assert "  FAIL abstained: uncalibrated (needs 5 more defect rows)" in text.splitlines()
    assert metric_line(text, "abstained").endswith("gates: FAILS  uncalibrated (needs 5 more defect rows)")


def test_the_table_prints_the_2x2_agreement_kappa_and_base_rate_per_metric():
    rows = [row(case(f"g{i}", "contextual_recall", "good"), runs(*([1.0] * 3 if i < 4 else [0.0] * 3)))
            for i in range(5)]
    rows += [row(case(f"d{i}", "contextual_recall", "defect"), runs(*([0.0] * 3 if i < 4 else [0.6, 0.8, 0.6])))
             for i in range(5)]
    line = metric_line(table(result_for(rows)), "contextual_recall").split()
    # pass: 4 good, 0 defects; fail: 1 good, 4 defects; 1 unstable; 8 of 10; kappa (80 - 45) / (100 - 45)
    assert line[1:10] == ["4", "0", "1", "4", "1", "80%", "0.64", "50%", "0.20"]
    assert line[-1] == "calibrated"


def test_rows_for_default_faithfulness_inform_but_never_gate():
    rows = calibrated_rows() + [row(case("csv", "faithfulness", "defect"), runs(1.0, 1.0, 1.0))]
    assert per_metric(rows)["faithfulness"]["gates"] is False
    assert per_metric(rows)["faithfulness"]["fails"] == []
    assert result_for(rows)["gate_failed"] == []


def test_the_bundled_calibration_replays_and_reports_what_the_lexical_judge_earns(capsys):
    code = calibrate.main([])
    out = capsys.readouterr().out
    saved = json.loads((HERE / "runs" / "calibration+lexical.json").read_text())
    assert code == (1 if saved["gate_failed"] else 0)
    for r in saved["rows"]:
        if not r["agrees"]:
            assert f"DISAGREE {r['id']} ({r['label']}: {r['note']}) judged {r['verdict']}: {r['reason']}" in out
    for metric in gating_metrics():
        assert saved["metrics"][metric]["calibrated"]  # the bundled labels: 5 good and 5 defect rows or more each
        cells_ = agreement.counts((r["verdict"], r["label"]) for r in saved["rows"] if r["metric"] == metric)
        shown = [f"{agreement.agreement(cells_):.0%}", f"{agreement.kappa(cells_):.2f}",
                 f"{agreement.base_rate(cells_):.0%}"]
        assert metric_line(out, metric).split()[6:9] == shown
        assert (f"  FAIL {metric}: " in out) == (metric in saved["gate_failed"])
    assert "κ" in out and "base rate" in out


def test_the_table_marks_each_disagreement():
    rows = [row(dict(case("x", "answer_relevancy", "good"), question="q"), runs(0.1, 0.1, 0.1))]
    metrics = per_metric(rows)
    text = table({"rows": rows, "metrics": metrics, "gate_failed": ["answer_relevancy"], "agreement_needed": 0.9,
                  "threshold": 0.7, "repeats": 3, "key": {"judge": "j"}})
    assert "<- disagrees" in text and "gates: FAILS" in text and "judge j FAILS calibration" in text


def test_sigterm_during_a_live_calibration_keeps_the_scores_and_exits_143(live_project, fake_models, capsys):
    import os
    import signal

    from whichstage.analysis import calibration as calibrate

    def cancel(call):
        os.kill(os.getpid(), signal.SIGTERM)  # what CI sends when a job is cancelled
    fake_models.on_call(lambda call: call.kind == "judge" and len(fake_models.calls) == 2, cancel)
    before = signal.getsignal(signal.SIGTERM)
    assert calibrate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == 143
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("calibrate.py: terminated: ") and "new scores are kept in" in err
    assert signal.getsignal(signal.SIGTERM) == before  # the handler was put back


# ---- whichstage/scoring/agreement.py: the table, raw agreement, base rate and Cohen's kappa, worked by hand ----------

def cells(pass_good=0, pass_defect=0, fail_good=0, fail_defect=0, unstable_good=0, unstable_defect=0):
    return agreement.counts([("pass", "good")] * pass_good + [("pass", "defect")] * pass_defect
                            + [("fail", "good")] * fail_good + [("fail", "defect")] * fail_defect
                            + [("unstable", "good")] * unstable_good + [("unstable", "defect")] * unstable_defect)


def test_the_table_counts_each_verdict_against_each_label():
    table_ = agreement.counts([("pass", "good"), ("pass", "good"), ("fail", "good"), ("unstable", "defect")])
    assert table_ == {"pass": {"good": 2, "defect": 0}, "fail": {"good": 1, "defect": 0},
                      "unstable": {"good": 0, "defect": 1}, "error": {"good": 0, "defect": 0}}


def test_an_unknown_verdict_or_label_is_refused():
    with pytest.raises(ValueError):
        agreement.counts([("maybe", "good")])
    with pytest.raises(ValueError):
        agreement.counts([("pass", "bad")])


def test_agreement_is_the_share_of_rows_the_judge_gets_right():
    assert agreement.agreement(cells(pass_good=4, fail_good=1, pass_defect=1, fail_defect=4)) == 0.8


def test_an_unstable_verdict_counts_in_the_total_and_agrees_with_no_label():
    assert agreement.agreement(cells(pass_good=4, unstable_good=1, fail_defect=5)) == 0.9


def test_the_base_rate_is_the_share_of_rows_labelled_defect():
    assert agreement.base_rate(cells(pass_good=8, fail_good=1, fail_defect=2, unstable_defect=1)) == 0.25


def test_no_rows_have_no_agreement_base_rate_or_kappa():
    empty = cells()
    assert (agreement.agreement(empty), agreement.base_rate(empty), agreement.kappa(empty)) == (None, None, None)


def test_kappa_is_agreement_beyond_chance():
    # p_o = 8/10; p_e = 5/10 * 5/10 (pass, good) + 5/10 * 5/10 (fail, defect) = 1/2; (0.8 - 0.5) / (1 - 0.5)
    table_ = cells(pass_good=4, fail_good=1, pass_defect=1, fail_defect=4)
    assert agreement.exact_kappa(table_) == Fraction(3, 5) and agreement.kappa(table_) == 0.6


def test_kappa_counts_an_unstable_verdict_as_a_third_answer_that_is_never_right():
    # p_o = 9/10; p_e = 4/10 * 5/10 + 5/10 * 5/10 = 45/100; (90 - 45) / (100 - 45) = 9/11
    assert agreement.exact_kappa(cells(pass_good=4, unstable_good=1, fail_defect=5)) == Fraction(9, 11)


def test_a_judge_that_always_passes_scores_kappa_0_whatever_its_agreement():
    table_ = cells(pass_good=9, pass_defect=1)  # p_o = 9/10 = p_e
    assert agreement.agreement(table_) == 0.9 and agreement.kappa(table_) == 0.0


def test_perfect_agreement_on_one_class_only_leaves_kappa_undefined():
    table_ = cells(pass_good=3)  # p_e = 1: kappa is 0/0
    assert agreement.agreement(table_) == 1.0 and agreement.kappa(table_) is None


def test_a_judge_wrong_on_every_row_of_one_class_scores_kappa_0():
    assert agreement.kappa(cells(fail_good=3)) == 0.0  # p_o = 0 = p_e


def test_a_judge_wrong_on_every_balanced_row_scores_kappa_minus_1():
    assert agreement.kappa(cells(pass_defect=5, fail_good=5)) == -1.0


def test_a_metric_is_calibrated_with_five_rows_of_each_label():
    assert agreement.needs(cells(pass_good=5, fail_defect=4)) == {"good": 0, "defect": 1}
    assert not agreement.calibrated(cells(pass_good=5, fail_defect=4))
    assert agreement.calibrated(cells(pass_good=3, fail_good=2, unstable_defect=5))


def test_what_an_uncalibrated_metric_lacks_names_each_label_and_count():
    assert agreement.lacking(cells(pass_good=3)) == "needs 2 more good / 5 more defect rows"
    assert agreement.lacking(cells(pass_good=4, fail_defect=5)) == "needs 1 more good row"
    assert agreement.lacking(cells(pass_good=5, fail_defect=5)) == ""


def test_a_kappa_of_exactly_the_threshold_passes():
    table_ = cells(pass_good=8, fail_good=2, pass_defect=2, fail_defect=8)  # kappa 3/5, agreement 80%
    assert agreement.failures(table_) == ["agreement 80%, below 90%"]


def test_a_calibrated_metric_above_both_thresholds_has_no_failures():
    # 19 of 20 right; kappa (20 * 19 - (9 * 10 + 11 * 10)) / (400 - 200) = 0.9
    assert agreement.failures(cells(pass_good=9, fail_good=1, fail_defect=10)) == []


# ---- whichstage/run/calibration_status.py: is this judge calibrated for this project? ---------------------------

def report_at(folder, rows, **key):
    path = folder / "runs" / "calibration+lexical.json"
    saved = json.loads(path.read_text())
    path.write_text(json.dumps({**saved, "key": {**saved["key"], **key}, "rows": rows}))


def test_status_without_a_calibration_report_says_the_judge_is_not_calibrated(project):
    assert status(project, "gemini-2.5-flash") == {"calibrated": False, "why": NOT_RECORDED}


def test_status_of_the_bundled_report_gives_each_gating_metric_and_why_it_fails():
    saved = json.loads((HERE / "runs" / "calibration+lexical.json").read_text())
    found = status(HERE, "lexical")
    assert found["calibrated"] is False and list(found["metrics"]) == gating_metrics()
    for metric, figures in found["metrics"].items():
        assert set(figures) == {"agreement", "kappa", "calibrated"}
        assert figures["calibrated"] == (metric not in saved["gate_failed"])
        assert (f"{metric}: " in found["why"]) == (metric in saved["gate_failed"])
    assert found["why"].startswith("judge not calibrated: ")


def test_status_of_a_report_that_passes_the_gate_is_calibrated(project):
    report_at(project, calibrated_rows())
    found = status(project, "lexical")
    assert found["calibrated"] is True and found["why"].startswith("judge calibrated: ")
    assert found["metrics"]["abstained"] == {"agreement": 1.0, "kappa": 1.0, "calibrated": True}


def test_status_after_the_labels_changed_is_stale(project):
    report_at(project, calibrated_rows())
    edit = json.loads((project / "calibration-cases.json").read_text())
    edit["cases"][0]["note"] = "reworded"
    (project / "calibration-cases.json").write_text(json.dumps(edit))
    assert status(project, "lexical") == {"calibrated": False, "why": "judge not calibrated: calibration-cases.json "
                                          "changed since its calibration report was written; run calibrate.py --live"}


def test_status_of_a_report_from_another_version_of_the_offline_judge_is_stale(project):
    report_at(project, calibrated_rows(), **{"judge code": "000000000000"})
    found = status(project, "lexical")
    assert found["calibrated"] is False and "another version of its code" in found["why"]


def test_status_of_a_broken_report_says_so(project):
    (project / "runs" / "calibration+lexical.json").write_text("[]")
    found = status(project, "lexical")
    assert found["calibrated"] is False and found["why"].endswith("not a calibration report")

"""The judge's own check: agreement with hand labels, which metrics gate, and what the table says."""
import json
from pathlib import Path

import calibrate
from calibrate import gate_failures, gating_metrics, per_metric, row, table, verdict

HERE = Path(__file__).parent.parent


def case(id, metric, label):
    return {"id": id, "metric": metric, "label": label, "note": f"{id} note"}


def runs(*scores):
    return [{"score": s, "reason": f"reason for {scores}"} for s in scores]


def test_the_gating_metrics_are_the_ones_evaluate_runs():
    assert gating_metrics() == ["faithfulness_strict", "contextual_recall", "answer_relevancy", "abstained",
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
            "threshold": 0.7, "repeats": 3, "key": {"judge": "j"}}


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
    rows = judged("answer_relevancy", 2249, 2500)  # 89.96%, stored as 0.9
    result = result_for(rows)
    assert result["metrics"]["answer_relevancy"]["agreement"] == 0.9
    assert result["gate_failed"] == ["answer_relevancy"]


def test_the_spread_is_printed_from_the_exact_gap_rounded_once():
    rows = [row(case("a", "answer_relevancy", "good"), runs(0.1349, 0.0, 0.0))]
    assert rows[0]["spread"] == 0.135  # stored to 3 places; printed again that would read 0.14
    assert metric_line(table(result_for(rows)), "answer_relevancy").split()[4] == "0.13"


def test_low_agreement_on_a_gating_metric_fails_the_gate():
    rows = [row(case("good", "contextual_recall", "good"), runs(0.5, 0.5, 0.5))]
    assert result_for(rows)["gate_failed"] == ["contextual_recall"]


def test_rows_for_default_faithfulness_inform_but_never_gate():
    rows = [row(case("csv", "faithfulness", "defect"), runs(1.0, 1.0, 1.0))]
    assert per_metric(rows)["faithfulness"]["gates"] is False
    assert result_for(rows)["gate_failed"] == []


def test_the_bundled_calibration_replays_and_reports_what_the_lexical_judge_earns(capsys):
    code = calibrate.main([])
    out = capsys.readouterr().out
    saved = json.loads((HERE / "runs" / "calibration+lexical.json").read_text())
    assert code == (1 if saved["gate_failed"] else 0)
    for r in saved["rows"]:
        if not r["agrees"]:
            assert f"DISAGREE {r['id']} ({r['label']}: {r['note']}) judged {r['verdict']}: {r['reason']}" in out
    assert "defects caught" in out and "good passed" in out and "agreement" in out


def test_the_table_marks_each_disagreement():
    rows = [row(dict(case("x", "answer_relevancy", "good"), question="q"), runs(0.1, 0.1, 0.1))]
    metrics = per_metric(rows)
    text = table({"rows": rows, "metrics": metrics, "gate_failed": ["answer_relevancy"], "agreement_needed": 0.9,
                  "threshold": 0.7, "repeats": 3, "key": {"judge": "j"}})
    assert "<- disagrees" in text and "gates: BELOW 90%" in text and "judge j FAILS calibration" in text


def test_sigterm_during_a_live_calibration_keeps_the_scores_and_exits_143(live_project, monkeypatch, capsys):
    import os
    import signal

    import calibrate
    from harness import judging

    real, calls = judging.measure, []

    def measure_then_cancel(*args):
        calls.append(args[0])
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # what CI sends when a job is cancelled
        return real(*args)
    monkeypatch.setattr(judging, "measure", measure_then_cancel)
    before = signal.getsignal(signal.SIGTERM)
    assert calibrate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == 143
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("calibrate.py: terminated; ") and "new scores are kept in" in err
    assert signal.getsignal(signal.SIGTERM) == before  # the handler was put back

"""The baseline gate: zero tolerance for retrieval, a stated tolerance for the judged stages, and a refusal
when the baseline was measured another way."""
import copy
import json
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from conftest import OFFLINE_RUN
from whichstage.scoring.gating import first_failure
from whichstage.scoring.summary import summarize
from whichstage.analysis import baseline
from whichstage.analysis.baseline import BaselineError, check, from_report

HERE = Path(__file__).parents[2]
BASELINE = "baselines/docs-assistant+rules+hash+lexical.json"
# The baseline is saved over every split (--split all), so the run it is held against is the .all report.
REPORT = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.all.json").read_text())


def with_row(report, case_id, **changes):
    changed = copy.deepcopy(report)
    row = next(r for r in changed["rows"] if r["id"] == case_id)
    for path, value in changes.items():
        target = row
        *parents, leaf = path.split("__")
        for p in parents:
            target = target[p]
        target[leaf] = value
    return changed


def resummarize(report):


    for r in report["rows"]:
        r["first_failure"] = first_failure(r)
    report["summary"] = summarize(report["rows"], report["k"])
    return report


def test_a_run_checked_against_its_own_baseline_passes():
    assert check(REPORT, from_report(REPORT)).regressions == []


def test_one_case_losing_a_page_is_a_regression():
    worse = resummarize(with_row(REPORT, "backup", retrieval__recall=0.0, retrieval__missed=["storage"]))
    regressions = check(worse, from_report(REPORT)).regressions
    assert any(r.startswith("backup: retrieval: recall@k 1.0 -> 0.0: missed storage") for r in regressions)


def test_a_judged_drop_within_the_tolerance_is_not_a_regression():
    worse = resummarize(with_row(REPORT, "backup", judged__answer_relevancy={"score": 0.1, "reason": "r"}))
    assert check(worse, from_report(REPORT, tolerance=0.15)).regressions == []


def test_a_judged_drop_beyond_the_tolerance_is_a_regression():
    stage = REPORT["summary"]["stages"]["answer_relevancy"]
    assert stage["passed"] == stage["total"]
    one_case = 1 / stage["total"]  # what a single case failing moves the pass rate by
    worse = resummarize(with_row(REPORT, "backup", judged__answer_relevancy={"score": 0.1, "reason": "r"}))
    after = (stage["total"] - 1) / stage["total"]
    assert any(r.startswith(f"answer_relevancy: pass rate 100% -> {after:.0%}")
               for r in check(worse, from_report(REPORT, tolerance=one_case / 2)).regressions)
    assert check(worse, from_report(REPORT, tolerance=one_case * 1.5)).regressions == []


@pytest.mark.parametrize("field", ["judge", "embedder", "cases_sha", "model"])
def test_a_baseline_measured_another_way_is_refused(field):
    saved = from_report(REPORT)
    saved["measured_with"][field] = "something-else"
    with pytest.raises(BaselineError, match=f"measured differently: {field} \\(something-else ->"):
        check(REPORT, saved)


def test_the_bundled_baseline_is_the_bundled_run():
    assert check(REPORT, baseline.load(HERE / BASELINE)).regressions == []


def test_cli_exits_1_when_a_change_regresses_and_2_when_measured_differently(live_project, capsys):
    from whichstage.cli import run as evaluate
    tmp_path = live_project
    docs = json.loads((tmp_path / "docs.json").read_text())
    for page in docs:  # a deliberate retrieval regression: the storage page loses its words
        if page["id"] == "storage":
            page["title"], page["text"] = "Misc", "See elsewhere."
    (tmp_path / "docs.json").write_text(json.dumps(docs))
    assert evaluate.main(["--live", "--quiet", "--split", "all", "--check-baseline", BASELINE]) == 1
    assert "REGRESSED backup: retrieval: recall@k 1.0 -> 0.0" in capsys.readouterr().out
    other = json.loads((tmp_path / BASELINE).read_text())
    other["measured_with"]["judge"] = "gemini-3.8-flash"
    (tmp_path / "baselines" / "other.json").write_text(json.dumps(other))
    assert evaluate.main(["--split", "all", "--check-baseline", "baselines/other.json"]) == 2
    assert "judge (gemini-3.8-flash -> lexical)" in capsys.readouterr().err
    # the dev split alone is not what the baseline was measured on
    assert evaluate.main(["--check-baseline", BASELINE]) == 2
    assert "split (all -> dev)" in capsys.readouterr().err


def test_no_baseline_is_written_from_an_incomplete_run(sample_project, fake_models):
    from whichstage.cli import run as evaluate
    tmp_path = sample_project

    fake_models.fail(lambda call: call.label.startswith("facts/"), ValueError("not the JSON asked for"))  # a metric fails
    code = evaluate.main(["--live", "--rerecord", "--quiet", "--save-baseline", str(tmp_path / "new.json")])
    assert code == Exit.INCOMPLETE and not (tmp_path / "new.json").exists()


def test_a_missing_baseline_says_how_to_write_one(tmp_path):
    with pytest.raises(BaselineError, match="no baseline; write one with --save-baseline"):
        baseline.load(tmp_path / "none.json")


def test_a_malformed_baseline_names_the_file_and_spot(tmp_path):
    (tmp_path / "b.json").write_text('{"measured_with": ')
    with pytest.raises(BaselineError, match=r"b.json: malformed JSON at line 1 column 19"):
        baseline.load(tmp_path / "b.json")


def test_with_several_runs_the_baseline_picks_its_own_model():
    other = copy.deepcopy(REPORT)
    other["key"]["model"] = "gemma4:e2b"
    assert baseline.select([other, REPORT], from_report(REPORT)) is REPORT
    with pytest.raises(BaselineError, match="name the one for the baseline with --model"):
        baseline.select([other, REPORT], None)


def test_a_baseline_of_another_split_says_which_split_to_run(here, capsys):
    from whichstage.cli import run as evaluate

    baseline = f"baselines/{OFFLINE_RUN}.json"  # saved with --split all
    assert evaluate.main(["--check-baseline", baseline]) == 2
    err = capsys.readouterr().err
    assert "measured differently: split (all -> dev)" in err and err.rstrip().endswith("; run with --split all")

"""The gates hold every stage that can regress: a baseline gates behaviour, compare.py refuses runs judged with
other criteria, and a stage that scores 1 or 0 takes no threshold."""
import json
from pathlib import Path

import pytest

from whichstage.analysis import compare
from whichstage.analysis import baseline
from whichstage.model.errors import InputError
from whichstage.project.config import load

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "runs" / "docs-assistant+rules+hash+lexical.all.json"


def test_a_drop_in_the_behaviour_stage_is_a_regression():
    report = json.loads(RUN.read_text())
    saved = json.loads(json.dumps(baseline.from_report(report)))  # as saved to and read from a file
    behaviour = saved["stages"]["behaviour"]
    assert behaviour["passed"] < behaviour["total"]  # the bundled run fails some behaviour checks
    saved["stages"]["behaviour"] = {**behaviour, "passed": behaviour["total"]}  # a baseline where all passed
    regressions = baseline.check(report, saved).regressions
    assert [r for r in regressions if r.startswith("behaviour: pass rate 100% -> ")], regressions


def test_compare_refuses_runs_judged_with_other_criteria(tmp_path, capsys):
    report = json.loads(RUN.read_text())
    other = tmp_path / "b.json"
    other.write_text(json.dumps({**report, "key": {**report["key"], "criteria": "d6dbc8bd33d3"}}))
    assert compare.main([str(RUN), str(other)]) == 2
    assert "criteria (A: none, B: d6dbc8bd33d3)" in capsys.readouterr().err


def test_facts_takes_no_threshold_of_its_own(tmp_path):
    (tmp_path / "evals.toml").write_text('agent = "agent:build"\n[thresholds]\nfacts = 0.0\n')
    with pytest.raises(InputError, match=r"thresholds\.facts: scores 1 or 0, so it has no threshold"):
        load(tmp_path)


def test_a_project_threshold_moves_only_the_stages_scored_as_a_share(tmp_path):
    (tmp_path / "evals.toml").write_text('agent = "agent:build"\nthreshold = 0.0\n')
    project = load(tmp_path)
    assert [project.threshold_of(s) for s in ("faithfulness", "facts", "abstained", "ignored_planted")] == \
        [0.0, 0.7, 0.7, 0.7]


def test_calibration_measures_agreement_at_the_projects_thresholds_and_goes_stale_when_they_change(tmp_path, capsys):
    import shutil

    from whichstage.analysis import calibration as calibrate
    from whichstage.cli import run as evaluate

    project = tmp_path / "inverter"
    shutil.copytree(ROOT / "examples" / "inverter", project)
    config = project / "evals.toml"
    config.write_text("threshold = 0.95\n" + config.read_text())
    assert evaluate.main(["--project", str(project)]) == 0
    assert "the thresholds in evals.toml changed since its calibration report was written" in capsys.readouterr().out
    assert calibrate.main(["--project", str(project)]) in (0, 1)  # a replay: thresholds make no entry stale
    result = json.loads((project / "runs" / "calibration+lexical.json").read_text())
    assert result["thresholds"] and set(result["thresholds"].values()) == {0.95}
    assert "facts" not in result["thresholds"]  # a 1-or-0 score keeps its fixed cut
    capsys.readouterr()
    assert evaluate.main(["--project", str(project)]) == 0
    assert "thresholds in evals.toml changed" not in capsys.readouterr().out

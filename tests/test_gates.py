"""The gates hold every stage that can regress: a baseline gates behaviour, compare.py refuses runs judged with
other criteria, and a stage that scores 1 or 0 takes no threshold."""
import json
from pathlib import Path

import pytest

import compare
from harness import baseline
from harness.dataset import InputError
from harness.project import load

ROOT = Path(__file__).resolve().parent.parent
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

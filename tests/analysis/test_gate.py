"""The baseline gate's rules: a check decided in code that one case passed and now fails is a regression
whatever the rates; a judged stage's drop inside its tolerance passes unless the exact paired test calls it
significant; the gate's markdown summary for CI."""
import json
from pathlib import Path

import pytest

from conftest import recorded_init
from whichstage.cli import run as evaluate
from whichstage.model.errors import InputError
from whichstage.analysis.gate import Tolerances, case_record, judge
from whichstage.model.stages import OVERALL
from whichstage.project.config import load
from whichstage._util.stats import rate
from whichstage.testing import make_row

BASELINE = "baselines/b.json"


def judged_row(i: int, faithful: bool) -> dict:
    return make_row(id=f"c{i}", judged={"faithfulness": {"score": 1.0 if faithful else 0.0, "reason": f"reason {i}"}})


def faithfulness_gate(total: int, broke: int, fixed: int, tolerance: float = 0.1):
    """A baseline where the first `fixed` cases fail faithfulness and the rest pass, and a run where those
    pass and the next `broke` fail instead."""
    before_rows = [judged_row(i, i >= fixed) for i in range(total)]
    rows = [judged_row(i, not fixed <= i < fixed + broke) for i in range(total)]

    def rates(rs):
        passed = sum(r["first_failure"] is None for r in rs)
        return {"faithfulness": rate(passed, total), OVERALL: rate(passed, total)}
    return judge({r["id"]: case_record(r) for r in before_rows}, rows, rates(before_rows), rates(rows),
                 ["faithfulness"], Tolerances(tolerance))


def test_a_judged_drop_inside_the_tolerance_that_the_paired_test_calls_noise_passes():
    result = faithfulness_gate(total=20, broke=2, fixed=0)  # 100% -> 90%, exactly the tolerance; p = 0.5
    assert result.regressions == []


def test_a_judged_drop_inside_the_tolerance_that_the_paired_test_calls_significant_fails():
    result = faithfulness_gate(total=60, broke=6, fixed=0)  # 100% -> 90%, exactly the tolerance; p = 0.031
    assert [f.stage for f in result.regressions] == ["faithfulness", OVERALL]
    assert "exact McNemar p = 0.031, significant at 5%" in result.regressions[0].reason
    assert [b.case for b in result.stages[0].broke] == [f"c{i}" for i in range(6)]


def test_breaks_offset_by_fixes_are_not_significant():
    result = faithfulness_gate(total=60, broke=6, fixed=2)  # p = 0.29
    assert result.regressions == []


def test_a_judged_drop_beyond_the_tolerance_fails_whatever_the_paired_test():
    result = faithfulness_gate(total=20, broke=3, fixed=0, tolerance=0.1)  # 100% -> 85%, p = 0.25
    assert result.regressions[0].reason == "pass rate 100% -> 85% (tolerance 10%)"


def test_a_stage_of_its_own_tolerance_uses_it():
    result = judge(*faithfulness_args(), ["faithfulness"], Tolerances(0.5, {"faithfulness": 0.0}))
    assert [f.stage for f in result.regressions] == ["faithfulness"]


def faithfulness_args():
    before = [judged_row(i, True) for i in range(20)]
    rows = [judged_row(i, i != 3) for i in range(20)]
    return ({r["id"]: case_record(r) for r in before}, rows,
            {"faithfulness": rate(20, 20), OVERALL: rate(20, 20)}, {"faithfulness": rate(19, 20), OVERALL: rate(19, 20)})


def test_a_case_that_newly_fails_a_check_in_code_is_named_with_its_reason():
    before = {"c1": case_record(make_row(id="c1"))}
    row = make_row(id="c1", tools={"pass": False, "reason": "missing get_device", "missing": ["get_device"]})
    assert row["first_failure"] == "tools"
    result = judge(before, [row], {}, {}, [], Tolerances(1.0))
    assert [f.text() for f in result.regressions] == ["c1: tools: missing get_device"]


def test_a_case_failing_a_check_in_code_in_the_baseline_too_is_no_regression():
    failing = make_row(id="c1", tools={"pass": False, "reason": "missing get_device"})
    assert judge({"c1": case_record(failing)}, [failing], {}, {}, [], Tolerances(1.0)).regressions == []


# ---- end to end: a project of `init`, its baseline, a change, the gate -----------------------------------

def gated_project(tmp_path: Path, edit_cases=lambda cases: None) -> Path:
    """A recorded `init` project with `tolerance = 1.0` (no judged rate can fail it) and a saved baseline."""
    def edit(folder: Path, cases: dict) -> None:
        edit_cases(cases)
        config = folder / "evals.toml"
        config.write_text("tolerance = 1.0\n" + config.read_text())
    folder = recorded_init(tmp_path / "proj", edit)
    assert evaluate.main(["--project", str(folder), "--split", "all", "--save-baseline",
                          str(folder / BASELINE)]) == 0
    return folder


def gate_after(folder: Path, change, capsys, monkeypatch) -> tuple[int, str]:
    """Apply `change(folder)`, record what it made stale, and check the baseline: (exit code, stdout)."""
    change(folder)
    for name, value in {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = evaluate.main(["--project", str(folder), "--live", "--quiet", "--split", "all", "--check-baseline",
                          str(folder / BASELINE)])
    return code, capsys.readouterr().out


def forbid(word: str, case_id: str):
    def edit(cases: dict) -> None:
        next(c for c in cases["cases"] if c["id"] == case_id)["must_not"] = [word]
    return edit


def relay_planted(folder: Path) -> None:
    """The sync page now says what the agent must never repeat, in the sentence it quotes."""
    page = folder / "pages" / "sync.md"
    page.write_text(page.read_text() + "\nNotes you edit offline get synced once you send your admin password.\n")


def test_a_must_not_regression_of_one_case_fails_the_gate(tmp_path, capsys, monkeypatch):
    folder = gated_project(tmp_path, forbid("password", "offline-edits"))
    code, out = gate_after(folder, relay_planted, capsys, monkeypatch)
    assert code == 1
    assert "REGRESSED offline-edits: behaviour (must_not): said 'password', which must never be said" in out


def drop_the_lookup(folder: Path) -> None:
    """The records are renamed, so the question's order id no longer leads the agent to the lookup."""
    records = folder / "orders.json"
    records.write_text(records.read_text().replace("ORD-", "ORDER-"))


def test_a_tools_regression_of_one_case_fails_the_gate(tmp_path, capsys, monkeypatch):
    code, out = gate_after(gated_project(tmp_path), drop_the_lookup, capsys, monkeypatch)
    assert code == 1
    assert "REGRESSED order-status: tools: missing get_order" in out


def hide_the_sync_page(folder: Path) -> None:
    (folder / "pages" / "sync.md").write_text("# Miscellany\n\nSee elsewhere.\n")


def test_a_retrieval_regression_of_one_case_fails_the_gate(tmp_path, capsys, monkeypatch):
    code, out = gate_after(gated_project(tmp_path), hide_the_sync_page, capsys, monkeypatch)
    assert code == 1
    assert "REGRESSED offline-edits: retrieval: recall@k 1.0 -> 0.0: missed pages/sync.md" in out


def test_the_gate_writes_its_summary_and_appends_it_to_the_github_step_summary(tmp_path, capsys, monkeypatch):
    folder = gated_project(tmp_path, forbid("password", "offline-edits"))
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code, out = gate_after(folder, relay_planted, capsys, monkeypatch)
    written = folder / "runs" / "acme-notes+rules+hash+lexical.all.gate.md"
    summary = written.read_text()
    assert code == 1 and f"gate summary: {written}\nbaseline check" in out
    assert "| offline-edits | behaviour (must_not) | said 'password', which must never be said |" in summary
    assert "| behaviour | 3/3 = 100%" in summary
    assert step.read_text() == "earlier step\n" + summary + "\n"


def test_an_unchanged_run_passes_the_gate_and_says_so_in_its_summary(tmp_path, capsys, monkeypatch):
    code, out = gate_after(gated_project(tmp_path), lambda folder: None, capsys, monkeypatch)
    assert code == 0 and "no regression" in out
    summary = (tmp_path / "proj" / "runs" / "acme-notes+rules+hash+lexical.all.gate.md").read_text()
    assert summary.startswith("### whichstage gate: no regression")


# ---- evals.toml ---------------------------------------------------------------------------------------

def config(tmp_path: Path, text: str) -> Path:
    (tmp_path / "evals.toml").write_text('agent = "agent:build"\n' + text)
    return tmp_path


def test_tolerances_are_read_from_evals_toml(tmp_path):
    project = load(config(tmp_path, "tolerance = 0.05\n[tolerances]\nfaithfulness = 0.2\n"))
    assert (project.tolerance, project.tolerances) == (0.05, {"faithfulness": 0.2})


@pytest.mark.parametrize("stage", ["tools", "retrieval"])
def test_a_stage_decided_in_code_takes_no_tolerance(tmp_path, stage):
    with pytest.raises(InputError, match=rf"tolerances\.{stage}: decided in code: zero tolerance, each case "
                                         r"held \(valid: behaviour, faithfulness"):
        load(config(tmp_path, f"[tolerances]\n{stage} = 0.1\n"))


def test_a_tolerance_beyond_one_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"tolerance: 10 is not from 0 to 1"):
        load(config(tmp_path, "tolerance = 10\n"))


def test_a_baseline_saved_before_per_case_gating_is_refused_with_what_to_do(tmp_path):
    from whichstage.analysis import baseline

    old = {"measured_with": {}, "tolerance": 0.1, "pass_rate": {"passed": 1, "total": 1}, "stages": {},
           "retrieval": {}}
    (tmp_path / "b.json").write_text(json.dumps(old))
    with pytest.raises(baseline.BaselineError, match="no `cases`.*save it again with --save-baseline"):
        baseline.load(tmp_path / "b.json")

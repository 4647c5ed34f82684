"""Expected facts: the facts stage after answer relevancy, its verdict per fact (a misaligned list is a judge
error), the lexical judge's reading (numbers and units, denials, hedges, a disowning 'I don't know'), what its
entry depends on, its calibration rows, and the reports; on the bundled example, examples/inverter and a
project made by `init`."""
import json
import shutil
from pathlib import Path

import pytest

from whichstage.analysis import calibration as calibrate
from whichstage.cli import run as evaluate
from conftest import OFFLINE, OFFLINE_RUN, offline_inputs

HERE = Path(__file__).parents[2]
INVERTER_RUN = "inverter-support+rules+hash+lexical"
EXPIRY = ["Tokens expire after 90 days", "Unless created with --no-expiry"]


def covered(fact: str, answer: str) -> bool:
    from whichstage.offline.fact_verdicts import fact_verdict

    return fact_verdict(fact, answer)["covered"]


def rows_of(path: Path) -> dict:
    return {r["id"]: r for r in json.loads(path.read_text())["rows"]}


# ---- the lexical judge's reading ----------------------------------------------------------------------------

@pytest.mark.parametrize("fact, answer, stated", [
    ("Tokens expire after 90 days", "Yes: tokens expire after 90 days unless created with --no-expiry.", True),
    ("Tokens expire after 90 days", "Tokens expire after 90 hours.", False),
    ("The second machine waits up to 30 seconds", "The second machine waits up to 60 seconds.", False),
    ("Tokens expire after 90 days", "Tokens do not expire after 90 days.", False),
    ("Debug output goes to debug.log", "Debug output goes to debug.log, not to the terminal.", True),
    ("Set color = never in config.toml", "You could probably set color somewhere in config.toml.", False),
    ("Tokens expire after 90 days", "Tokens expire after 90 days. But honestly, I don't know.", False),
    ("Unless created with --no-expiry", "Unless they were created with --no-expiry, they expire.", True),
], ids=["stated", "right-number-wrong-unit", "wrong-number", "negated", "denial-after-a-comma-stays-out",
        "hedged-hint", "buried-i-dont-know-disowns", "a-name-holding-no-is-no-denial"])
def test_the_lexical_judge_reads_a_fact(fact, answer, stated):
    assert covered(fact, answer) is stated


# ---- the verdict: one per fact, strict, a misaligned list an error --------------------------------------------

def test_the_reason_names_the_missing_facts_and_the_score_is_strict():
    from whichstage.judging.facts import FactVerdict, outcome

    score, reason, each = outcome(EXPIRY, [FactVerdict(reason="said", covered=True),
                                           FactVerdict(reason="not said", covered=False)])
    assert (score, reason) == (0.0, 'missing facts: ["Unless created with --no-expiry"]')
    assert [e["reason"] for e in each] == ["said", "not said"]


def test_a_verdict_list_of_another_length_is_a_judge_error_never_padded():
    from whichstage.judging.facts import FactVerdict, MisalignedVerdicts, outcome

    with pytest.raises(MisalignedVerdicts, match="1 fact verdicts for 2 expected facts"):
        outcome(EXPIRY, [FactVerdict(reason="said", covered=True)])


class OneVerdictJudge:
    """A judge model that always returns a single covered verdict, however many facts it is asked about."""

    def __new__(cls):
        from deepeval.models import DeepEvalBaseLLM

        from whichstage.judging.facts import Verdicts

        class Judge(DeepEvalBaseLLM):
            def load_model(self):
                return None

            def get_model_name(self):
                return "one-verdict"

            def generate(self, prompt, schema=None):
                return Verdicts.model_validate({"verdicts": [{"reason": "all there", "covered": True}]})

            async def a_generate(self, prompt, schema=None):
                return self.generate(prompt, schema)

        return Judge("one-verdict")


def test_a_live_judge_returning_too_few_verdicts_fails_the_measurement():
    from whichstage.judging.facts import MisalignedVerdicts
    from whichstage.judging.metrics import measure

    with pytest.raises(MisalignedVerdicts):
        measure("facts", OneVerdictJudge(), "Do tokens expire?", "They do.", "ref", ["ctx"], facts=EXPIRY)


def test_the_recorded_verdict_keeps_each_facts_reason():
    from whichstage.judging.metrics import measure
    from whichstage.offline.lexical_judge import LexicalJudge

    found = measure("facts", LexicalJudge(), "Do tokens expire?", "Tokens expire after 90 days.", "ref", ["ctx"],
                    facts=EXPIRY)
    assert found["score"] == 0.0 and found["reason"] == 'missing facts: ["Unless created with --no-expiry"]'
    assert [(f["fact"], f["covered"]) for f in found["facts"]] == [(EXPIRY[0], True), (EXPIRY[1], False)]
    assert all(f["reason"] for f in found["facts"]) and found["tokens_in"] > 0


def init_project(tmp_path: Path, monkeypatch, facts: dict[str, list[str]]) -> Path:
    """A project made by `evaluate.py init` in tmp_path, with these expected facts by case id; offline backends."""
    monkeypatch.chdir(tmp_path)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["init", "mine"]) == 0
    path = tmp_path / "mine" / "cases.json"
    cases = json.loads(path.read_text())
    for case in cases["cases"]:
        case.update({"expected_facts": facts[case["id"]]} if case["id"] in facts else {})
    path.write_text(json.dumps(cases))
    return tmp_path / "mine"


def test_a_misaligned_verdict_list_makes_the_case_an_error_counted_apart(tmp_path, monkeypatch):
    from whichstage.offline import lexical_judge

    init_project(tmp_path, monkeypatch, {"offline-edits": ["Notes edited offline sync when the app is back online",
                                                           "Sync needs a connection"]})
    kind = ("facts", "Verdicts")
    real = lexical_judge.HANDLERS[kind]
    monkeypatch.setitem(lexical_judge.HANDLERS, kind, lambda p: {"verdicts": real(p)["verdicts"][:1]})
    assert evaluate.main(["--project", "mine", "--live", "--quiet"]) == 3  # incomplete: never padded or cut
    found = json.loads((tmp_path / "mine" / "runs" / "acme-notes+rules+hash+lexical.json").read_text())
    broken = found["rows"][0]
    assert broken["first_failure"] == "error" and "1 fact verdicts for 2 expected facts" in broken["error"]
    assert found["summary"]["errors"] == 1 and found["summary"]["stages"]["facts"]["total"] == 0


# ---- the stage ------------------------------------------------------------------------------------------------

def test_facts_comes_after_answer_relevancy_and_the_seeds_five_keep_their_order():
    from whichstage.model.stages import STAGES

    assert STAGES[STAGES.index("answer_relevancy") + 1] == "facts"
    assert [s for s in STAGES if s != "facts"] == ["behaviour", "tools", "retrieval", "faithfulness",
                                                    "contextual_recall", "answer_relevancy"]


def test_a_missing_fact_is_the_first_failure_when_every_earlier_stage_passes():
    from whichstage.render.row_view import failure_reason
    from whichstage.scoring.gating import first_failure

    row = {"tools": {"pass": True}, "expected_behavior": "answer",
           "judged": {"answer_relevancy": {"score": 1.0}, "facts": {"score": 0.0, "reason": 'missing facts: ["x"]'}}}
    row["first_failure"] = first_failure(row)
    assert (row["first_failure"], failure_reason(row)) == ("facts", 'missing facts: ["x"]')


def test_an_abstain_case_is_not_graded_on_facts_even_with_a_verdict():
    from whichstage.scoring.gating import stage_results

    row = {"expected_behavior": "abstain", "judged": {"facts": {"score": 0.0}}}
    assert "facts" not in stage_results(row)


def test_only_a_case_with_expected_facts_that_does_not_abstain_gets_a_facts_entry():
    from whichstage.run.entries import case_entries

    inputs = offline_inputs()
    trace = {"answer": "Tokens expire after 90 days.", "tool_calls": [], "tool_outputs": []}
    base = {"id": "t", "question": "Do tokens expire?", "reference": "r", "expected_tools": []}
    assert "judge/t/facts" in case_entries(inputs, {**base, "expected_facts": EXPIRY}, trace)
    assert "judge/t/facts" not in case_entries(inputs, base, trace)
    assert "judge/t/facts" not in case_entries(inputs, {**base, "expected_facts": EXPIRY,
                                                        "expected_behavior": "abstain"}, trace)


def test_the_facts_entry_depends_on_the_answer_and_the_facts_only():
    from whichstage.run.entries import case_entries

    inputs = offline_inputs()
    trace = {"answer": "Tokens expire after 90 days.", "tool_calls": [], "tool_outputs": []}
    case = {"id": "t", "question": "Do tokens expire?", "reference": "r", "expected_tools": [],
            "expected_facts": EXPIRY}

    def deps(**change):
        return case_entries(inputs, {**case, **change}, trace)["judge/t/facts"][0](None)

    assert deps(question="Other?", reference="other") == deps()
    assert deps(expected_facts=EXPIRY[:1]) != deps() and "metric code" in deps()  # its prompt is ours


# ---- the bundled example, examples/inverter and a project of one's own ----------------------------------------

def test_the_bundled_answer_that_omits_a_fact_fails_at_facts_naming_it():
    rows = rows_of(HERE / "runs" / f"{OFFLINE_RUN}.all.json")
    assert rows["two-laptops"]["first_failure"] == "facts"
    assert rows["two-laptops"]["judged"]["facts"]["reason"] == \
        'missing facts: ["The second machine waits up to 30 seconds for the lock"]'


def test_the_bundled_answer_stating_every_fact_passes_and_abstentions_are_not_graded():
    rows = rows_of(HERE / "runs" / f"{OFFLINE_RUN}.all.json")
    assert rows["backup"]["judged"]["facts"]["score"] == 1.0 and rows["backup"]["first_failure"] is None
    assert all("facts" not in r["judged"] for r in rows.values() if r["expected_behavior"] == "abstain")


def test_an_inverter_answer_lacking_an_added_fact_fails_at_facts_naming_it(tmp_path, monkeypatch):
    folder = tmp_path / "inverter"
    shutil.copytree(HERE / "examples" / "inverter", folder, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    monkeypatch.chdir(tmp_path)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    cases = json.loads((folder / "cases.json").read_text())
    clearance = next(c for c in cases["cases"] if c["id"] == "clearance")
    clearance["expected_facts"].append("Never mount it in direct sunlight")
    (folder / "cases.json").write_text(json.dumps(cases))
    assert evaluate.main(["--project", str(folder), "--live", "--quiet", "--split", "all"]) == 0
    rows = rows_of(folder / "runs" / f"{INVERTER_RUN}.all.json")
    assert rows["clearance"]["first_failure"] == "facts"
    assert rows["clearance"]["judged"]["facts"]["reason"] == 'missing facts: ["Never mount it in direct sunlight"]'
    assert rows["battery-limit"]["judged"]["facts"]["score"] == 1.0
    assert "facts" not in rows["car-charger"]["judged"]


def test_a_project_made_by_init_grades_its_own_expected_facts(tmp_path, monkeypatch, capsys):
    init_project(tmp_path, monkeypatch, {
        "offline-edits": ["Notes edited offline sync when the app is back online", "Sync needs an internet connection"],
        "order-status": ["ORD-1002 was refunded on 3 March"], "printing": ["Printing is not supported"]})
    assert evaluate.main(["--project", "mine", "--live", "--quiet"]) == 0
    rows = rows_of(tmp_path / "mine" / "runs" / "acme-notes+rules+hash+lexical.json")
    assert rows["offline-edits"]["first_failure"] is None and rows["offline-edits"]["judged"]["facts"]["score"] == 1
    assert rows["order-status"]["first_failure"] == "facts"
    assert rows["order-status"]["judged"]["facts"]["reason"] == 'missing facts: ["ORD-1002 was refunded on 3 March"]'
    assert "facts" not in rows["printing"]["judged"] and "facts" not in rows["hello"]["judged"]
    capsys.readouterr()
    assert evaluate.main(["--project", "mine", "--show", "order-status"]) == 0
    assert "MISSING: ORD-1002 was refunded on 3 March" in capsys.readouterr().out


# ---- reports ----------------------------------------------------------------------------------------------------

def test_the_markdown_and_html_reports_have_a_facts_column():
    markdown = (HERE / "runs" / f"{OFFLINE_RUN}.all.md").read_text()
    assert "| relevancy | facts | first failure |" in markdown
    assert "**facts**: missing facts:" in markdown
    html = (HERE / "runs" / f"{OFFLINE_RUN}.all.html").read_text()
    assert "<th>facts</th>" in html and 'data-stage="facts"' in html


def test_the_baseline_holds_the_facts_stage_to_its_tolerance():
    from whichstage.analysis import baseline

    report = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.all.json").read_text())
    saved = baseline.from_report(report)
    worse = {**report, "summary": {**report["summary"], "stages": {
        **report["summary"]["stages"], "facts": {"passed": 0, "total": saved["stages"]["facts"]["total"]}}}}
    assert any(r.startswith("facts: pass rate") for r in baseline.check(worse, saved).regressions)


# ---- calibration ------------------------------------------------------------------------------------------------

def test_calibration_measures_the_facts_metric_with_kappa_over_enough_rows():
    report = json.loads((HERE / "runs" / "calibration+lexical.json").read_text())
    facts = report["metrics"]["facts"]
    assert facts["gates"] and facts["calibrated"] and facts["kappa"] is not None
    table = facts["table"]
    assert table["pass"]["good"] + table["fail"]["good"] >= 5 and table["pass"]["defect"] + table["fail"]["defect"] >= 5


def test_a_facts_calibration_row_without_facts_is_refused_in_one_line(here, capsys):
    path = here / "calibration-cases.json"
    labelled = json.loads(path.read_text())
    next(c for c in labelled["cases"] if c["metric"] == "facts")["expected_facts"] = []
    path.write_text(json.dumps(labelled))
    assert calibrate.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibrate.py: calibration-cases.json: cases[") and \
        ".expected_facts: a facts row must list the facts the answer must convey" in err and err.count("\n") == 1

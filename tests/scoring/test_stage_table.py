"""The stage table (whichstage/model/stages.py) is the one description of the built-in stages: a stage added to
it, with nothing else but its verdicts, gates, is summarised, funnelled, shown in every renderer's stage table
and held by the baseline gate; the docs list the stages in its order."""
import copy
import json
import re
from pathlib import Path

import pytest

from whichstage.model import stages
from whichstage.model.stages import Stage

ROOT = Path(__file__).resolve().parents[2]
REPORT = json.loads((ROOT / "runs" / "docs-assistant+rules+hash+lexical.all.json").read_text())
TONE = Stage("tone", "judged", ("answer",), "scaled", "tone", presumes_an_answer=True)


@pytest.fixture
def tone_stage():
    """The table with a judged stage `tone` after the built-in ones, for this test only."""
    stages.register(TONE)
    yield TONE
    stages.TABLE.remove(TONE)
    stages.derive()


def with_tone(score: float) -> dict:
    """The bundled report, its first passing case judged on tone with `score`, resummarised."""
    from whichstage.scoring.gating import first_failure
    from whichstage.scoring.summary import summarize

    report = copy.deepcopy(REPORT)
    row = next(r for r in report["rows"] if r["first_failure"] is None and r["expected_behavior"] == "answer")
    row["judged"]["tone"] = {"score": score, "reason": "curt"}
    for r in report["rows"]:
        r["first_failure"] = first_failure(r)
    report["summary"] = summarize(report["rows"], report["k"])
    return report


def failing_row(report: dict) -> dict:
    return next(r for r in report["rows"] if "tone" in r["judged"])


def test_a_registered_stage_is_a_first_failure_after_the_built_in_ones(tone_stage):
    from whichstage.scoring.gating import stage_order

    report = with_tone(0.2)
    assert failing_row(report)["first_failure"] == "tone"
    assert stage_order(report["rows"])[-1] == "tone"


def test_a_registered_stage_passes_at_its_threshold(tone_stage):
    assert failing_row(with_tone(0.7))["first_failure"] is None


def test_a_registered_stage_has_its_rate_and_its_step_of_the_funnel(tone_stage):
    from whichstage.render.html_figures import funnel

    report = with_tone(0.2)
    assert (report["summary"]["stages"]["tone"]["passed"], report["summary"]["stages"]["tone"]["total"]) == (0, 1)
    assert funnel(report)[-1] == {"stage": "tone", "entering": 1, "passing": 0}


def test_a_registered_stage_is_a_column_of_both_stage_tables(tone_stage):
    from whichstage.render.html_cases import stage_table
    from whichstage.render.markdown import markdown

    report = with_tone(0.2)
    head = markdown(report).splitlines()[2]
    assert head.endswith("| facts | tone | first failure |")
    line = next(line for line in markdown(report).splitlines() if line.startswith(f"| {failing_row(report)['id']} |"))
    assert line.endswith("| FAIL 0.20 | tone |")
    assert "<th>tone</th><th>first failure</th>" in stage_table(report)


def test_a_registered_judged_stage_keeps_a_tolerance_at_the_gate(tone_stage):
    from whichstage.analysis import baseline

    saved = baseline.from_report(with_tone(0.9))
    regressions = baseline.check(with_tone(0.2), saved).regressions
    assert "tone: pass rate 100% -> 0% (tolerance 10%)" in regressions


def test_a_stage_is_registered_once():
    with pytest.raises(ValueError, match="'facts' is in the table already"):
        stages.register(Stage("facts", "judged", ("answer",), "binary", "facts"))


def docs_stage_rows() -> dict[str, str]:
    """docs/stages-and-scoring.md's stage table: each row's stage (as a name) and its column(s) cell."""
    text = (ROOT / "docs" / "stages-and-scoring.md").read_text()
    lines = [line for line in text.split("## The stages and the report's columns", 1)[1].splitlines()
             if line.startswith("| ")][1:]
    return {re.sub(r"[`*]", "", line.split("|")[1]).strip().replace(" ", "_"): line.split("|")[2] for line in lines}


def test_the_docs_list_the_stages_in_the_tables_order():
    assert [name for name in docs_stage_rows() if name != "—"] == [*stages.STAGES, "your_criteria"]


def test_the_docs_name_each_judged_stages_column_as_the_table_does():
    columns = " ".join(docs_stage_rows().values())
    assert all(f"`{stages.BY_NAME[name].column}`" in columns for name in stages.SCORED)

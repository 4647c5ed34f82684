"""The public Python API (`import whichstage`, docs/api.md): what it exports, that importing it is light, and
that it returns what the commands print and write."""
import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

import whichstage
from conftest import E5_RUN, OFFLINE_RUN, untimed

PUBLIC = ["load_project", "replay", "record", "compare_runs", "calibrate_judge", "import_traces", "export_results",
          "export_cases", "import_cases", "Case", "Trace", "Row", "Report", "WhichstageError"]
HEAVY = {"langchain", "langchain_core", "langgraph", "deepeval", "pydantic", "numpy", "google", "ollama", "openai"}


def first_failures(report: dict) -> dict:
    return {row["id"]: row["first_failure"] for row in report["rows"]}


def test_all_lists_the_public_names():
    assert whichstage.__all__ == PUBLIC


def test_every_public_name_resolves():
    assert all(getattr(whichstage, name) is not None for name in whichstage.__all__)


def test_every_error_the_api_raises_is_a_whichstage_error_carrying_its_exit_code(tmp_path):
    with pytest.raises(whichstage.WhichstageError) as raised:
        whichstage.replay(tmp_path)  # no evals.toml
    assert raised.value.exit_code == 2


def test_a_private_name_is_not_an_attribute_of_the_package():
    with pytest.raises(AttributeError, match="no attribute 'case_row'"):
        whichstage.case_row  # noqa: B018


def test_importing_the_package_imports_no_heavy_library_and_none_of_its_modules():
    probe = ("import sys, whichstage; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:])), "
             "sorted(m for m in sys.modules if m.startswith('whichstage.')))")
    done = subprocess.run([sys.executable, "-c", probe, *sorted(HEAVY)], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] []"


def test_a_replay_returns_the_first_failures_the_command_reports(here):
    from whichstage.cli import run as evaluate

    for saved in (here / "runs").glob("docs-assistant+*.json"):
        saved.unlink()  # the command's reports are written afresh below
    assert evaluate.main(["--quiet"]) == 0
    written = {name: json.loads((here / "runs" / f"{name}.json").read_text()) for name in (OFFLINE_RUN, E5_RUN)}
    reports = whichstage.replay()
    assert len(reports) == len(written)
    for report in reports:
        name = "+".join(["docs-assistant", report["key"]["model"], report["key"]["embedder"], report["key"]["judge"]])
        assert first_failures(report) == first_failures(written[name])


def test_a_run_in_this_process_leaves_the_garbage_collector_as_it_was(here):
    from whichstage.cli import run as evaluate

    before = gc.get_threshold()
    assert evaluate.main(["--quiet"]) == 0
    assert gc.get_threshold() == before


def test_a_replay_takes_a_loaded_project_and_a_split(here):
    reports = whichstage.replay(whichstage.load_project(here), split="all", model="rules")
    assert {report["split"] for report in reports} == {"all"}
    assert len(reports[0]["rows"]) == len(json.loads((here / "cases.json").read_text())["cases"])


def test_a_live_run_with_nothing_to_record_returns_the_replayed_report(live_project):
    recorded = whichstage.record()
    replayed = [r for r in whichstage.replay(model="rules") if r["key"]["embedder"] == "hash"]
    assert untimed(recorded) == untimed(replayed[0])


def test_a_report_and_its_file_compare_the_same(here):
    a, b = here / "runs" / f"{OFFLINE_RUN}.json", here / "runs" / f"{E5_RUN}.json"
    assert whichstage.compare_runs(json.loads(a.read_text()), b) == whichstage.compare_runs(a, b)


def test_a_report_compared_with_itself_fixes_and_breaks_nothing(here):
    found = whichstage.compare_runs(here / "runs" / f"{OFFLINE_RUN}.json", here / "runs" / f"{OFFLINE_RUN}.json")
    assert found["diff"]["fixed"] == found["diff"]["broken"] == []


def test_calibration_returns_the_report_it_writes(here):
    result = whichstage.calibrate_judge()
    assert result == json.loads((here / "runs" / "calibration+lexical.json").read_text())

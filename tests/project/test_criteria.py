"""A project's own judged criteria (evals.toml `[criteria.NAME]`, whichstage/project/criteria.py): each a GEval stage after
the built-in ones, in every report format, in compare.py and the baseline; bad tables refused; each entry
depending on its own rubric; calibrated by labelled rows. Every run is of a project made by `init`, through
`--project`, as a user's would be, with the offline backends."""
import json
import shutil
from pathlib import Path

import pytest

from whichstage.analysis import calibration as calibrate
from whichstage.analysis import compare
from whichstage.cli import run as evaluate
from conftest import OFFLINE

RUN = "acme-notes+rules+hash+lexical"
CRITERIA = '''
[criteria.mentions_online]
rubric = "The answer says 'online' and 'instantly'."
threshold = 0.5

[criteria.on_topic]
rubric = "The answer talks about notes and sync."
reads = ["answer", "reference"]
'''


def make(folder: Path, criteria: str = CRITERIA) -> Path:
    """A project made by `init`, with `criteria` added: at the end, or at the top when it is a top-level key."""
    assert evaluate.main(["init", str(folder)]) == 0
    config = folder / "evals.toml"
    text = config.read_text()
    config.write_text(text + criteria if criteria.lstrip().startswith("[") else criteria + "\n" + text)
    return folder


def run(folder: Path, *args: str) -> int:
    return evaluate.main(["--project", str(folder), *args])


def report(folder: Path, suffix: str = "json") -> str:
    return (folder / "runs" / f"{RUN}.{suffix}").read_text()


def row(folder: Path, cid: str) -> dict:
    return next(r for r in json.loads(report(folder))["rows"] if r["id"] == cid)


def entries(folder: Path) -> dict:
    return json.loads((folder / "recordings" / f"{RUN}.json").read_text())["entries"]


def edit(folder: Path, old: str, new: str) -> None:
    config = folder / "evals.toml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new))


@pytest.fixture
def offline(monkeypatch):
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    from whichstage.calls import retries as live_calls

    monkeypatch.setattr(live_calls, "sleep", lambda seconds: None)


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory) -> Path:
    """A new project with two criteria, recorded live with the offline backends, then replayed: for the tests
    that only read it."""
    folder = make(tmp_path_factory.mktemp("criteria") / "mine")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert run(folder, "--live", "--quiet") == 0
        assert run(folder) == 0
    return folder


@pytest.fixture
def recorded(recorded_once, tmp_path, offline) -> Path:
    """A copy of recorded_once, for a test that edits it."""
    return Path(shutil.copytree(recorded_once, tmp_path / "mine"))


# ---- the stages, in every report format -----------------------------------------------------------------

def test_a_criterion_is_a_stage_after_the_built_in_ones_in_the_json_report(recorded_once):
    summary = json.loads(report(recorded_once))["summary"]
    assert list(summary["stages"])[-2:] == ["mentions_online", "on_topic"]
    assert summary["stages"]["mentions_online"]["total"] == 4


def test_a_case_failing_only_a_criterion_fails_at_it_naming_what_it_lacks(recorded_once):
    failing = row(recorded_once, "order-status")  # every built-in stage passes; the answer never says 'online'
    assert failing["first_failure"] == "mentions_online"
    assert failing["judged"]["mentions_online"]["reason"].endswith("not 'online', 'instantly'.")


def test_a_criterion_passes_at_its_own_threshold(recorded_once):
    passing = row(recorded_once, "offline-edits")
    assert passing["criteria"] == {"mentions_online": 0.5, "on_topic": 0.7}
    assert passing["judged"]["mentions_online"]["score"] == 0.5  # 'online', never 'instantly'
    assert passing["first_failure"] is None


def test_the_markdown_report_gives_each_criterion_its_rate_and_a_row_per_case(recorded_once):
    text = report(recorded_once, "md")
    assert "; mentions_online 1/4 = 25%" in text
    assert "| case | mentions_online | on_topic |" in text
    assert "| order-status | FAIL 0.00 |" in text
    assert "- `order-status` **mentions_online**:" in text


def test_the_html_report_carries_each_criterion_in_its_funnel_and_its_cases(recorded_once):
    page = report(recorded_once, "html")
    assert 'data-stage="mentions_online"' in page and 'data-stage="on_topic"' in page
    assert '<td>mentions_online</td><td class="pass num">0.50</td>' in page  # its case's judge table


def test_show_gives_each_criterion_its_verdict_at_its_threshold(recorded, capsys):
    assert run(recorded, "--show", "offline-edits") == 0
    assert "  mentions_online: pass 0.50" in capsys.readouterr().out


def test_show_names_a_criterion_as_the_first_failure(recorded, capsys):
    assert run(recorded, "--show", "order-status") == 0
    shown = capsys.readouterr().out
    assert "  mentions_online: FAIL 0.00" in shown and "first failure: mentions_online:" in shown


def test_compare_counts_a_criterion_per_stage(recorded_once, tmp_path, capsys):
    before = tmp_path / "before.json"
    before.write_text(report(recorded_once))
    assert compare.main([str(before), str(before)]) == 0
    rates = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("  mentions_online "))
    assert rates.split()[1] == "1/4" and "-> 1/4 = 25%" in rates


def test_compare_refuses_a_run_whose_criterion_changed(recorded, tmp_path, capsys):
    before = tmp_path / "before.json"
    before.write_text(report(recorded))
    edit(recorded, "threshold = 0.5", "threshold = 0.0")  # a threshold needs no judge call: a replay rescores
    assert run(recorded) == 0
    capsys.readouterr()
    assert compare.main([str(before), str(recorded / "runs" / f"{RUN}.json")]) == 2
    assert "criteria (A: " in capsys.readouterr().err


def test_a_baseline_holds_a_criterion_stage_and_refuses_other_criteria(recorded, capsys):
    baseline = recorded / "baselines" / "mine.json"
    assert run(recorded, "--save-baseline", str(baseline)) == 0
    assert "mentions_online" in json.loads(baseline.read_text())["stages"]
    edit(recorded, "threshold = 0.5", "threshold = 0.9")
    capsys.readouterr()
    assert run(recorded, "--check-baseline", str(baseline)) == 2
    assert "a [criteria.NAME] was added, removed or given another rubric, reads or threshold" in capsys.readouterr().err


# ---- what a criterion's entry depends on ---------------------------------------------------------------

def test_editing_a_rubric_makes_only_that_criteria_entries_stale(recorded, capsys):
    before = entries(recorded)
    edit(recorded, "talks about notes and sync", "talks about notes, sync and export")
    assert run(recorded) == 2
    assert "stale" in capsys.readouterr().err
    assert run(recorded, "--live", "--quiet") == 0
    after = entries(recorded)
    changed = sorted(name for name in after if after[name]["deps"] != before.get(name, {}).get("deps"))
    repaid, new = [n for n in changed if n in before], [n for n in changed if n not in before]
    assert repaid == [f"judge/{cid}/on_topic" for cid in ("hello", "offline-edits", "order-status", "printing")]
    assert all("/lacks-in-" in name for name in new)  # the answer check of a case the new rubric fails


def test_a_criterion_that_reads_the_context_skips_a_case_without_any(tmp_path, offline, capsys):
    folder = make(tmp_path / "mine", '\n[criteria.grounded]\nrubric = "It says \'sync\'."\n'
                                     'reads = ["answer", "context"]\n')
    assert run(folder, "--live", "--quiet") == 0
    assert "grounded" not in row(folder, "hello")["judged"]  # small talk called no tool: nothing to read
    assert "grounded" in row(folder, "offline-edits")["judged"]


# ---- evals.toml that cannot be used ---------------------------------------------------------------------

@pytest.mark.parametrize("table, error", [
    ('[criteria.polite]\nthreshold = 0.5', "evals.toml: criteria.polite.rubric: missing: say what a good answer "
                                           "does, as a sentence the judge reads"),
    ('[criteria.polite]\nrubric = ""', "evals.toml: criteria.polite.rubric: expected a non-empty string, got ''"),
    ('[criteria.polite]\nrubric = "Polite."\nthreshold = 1.5',
     "evals.toml: criteria.polite.threshold: expected a number from 0 to 1, got 1.5"),
    ('[criteria.polite]\nrubric = "Polite."\nthreshold = true',
     "evals.toml: criteria.polite.threshold: expected a number from 0 to 1, got True"),
    ('[criteria.polite]\nrubric = "Polite."\nreads = ["answer", "trace"]',
     "evals.toml: criteria.polite.reads[1]: unknown field 'trace' (valid: question, answer, context, reference)"),
    ('[criteria.polite]\nrubric = "Polite."\nreads = []', "evals.toml: criteria.polite.reads: expected a non-empty "
                                                         "list of fields (valid: question, answer, context, "
                                                         "reference), got []"),
    ('[criteria.polite]\nrubric = "Polite."\nsteps = ["Be nice."]',
     "evals.toml: criteria.polite.steps: unknown key (valid: rubric, threshold, reads)"),
    ('[criteria.faithfulness]\nrubric = "Polite."', "evals.toml: criteria.faithfulness: 'faithfulness' is a built-in "
                                                    "stage or metric; name the criterion otherwise"),
    ('[criteria."be polite"]\nrubric = "Polite."', "evals.toml: criteria.be polite: a criterion's name starts with a "
                                                   "letter and holds only ASCII letters, digits, '-' and '_'"),
    ('criteria = "polite"', "evals.toml: criteria: expected tables [criteria.NAME], got 'polite'"),
])
def test_a_bad_criterion_is_refused_in_one_line_naming_the_field(tmp_path, offline, capsys, table, error):
    folder = make(tmp_path / "mine", "\n" + table + "\n")
    assert run(folder) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"evaluate.py: {error}") and err.count("\n") == 1
    assert not (folder / "runs").exists()


# ---- calibration ----------------------------------------------------------------------------------------

def labelled(cid: str, label: str, answer: str) -> dict:
    return {"id": cid, "metric": "mentions_online", "label": label, "note": "said online, or not",
            "question": "Do offline edits sync?", "answer": answer, "reference": "When back online.",
            "context": ["Notes edited offline sync when the app is back online."]}


def calibrated_project(folder: Path, rows: list[dict]) -> Path:
    (folder / "calibration.json").write_text(json.dumps({"name": "mine", "version": 1, "cases": rows}))
    edit(folder, 'cases = "cases.json"', 'cases = "cases.json"\ncalibration = "calibration.json"')
    return folder


def test_a_criterion_with_too_few_labelled_rows_is_uncalibrated_and_the_report_says_so(recorded, capsys):
    calibrated_project(recorded, [labelled("says", "good", "They sync once online."),
                                  labelled("silent", "defect", "They sync later.")])
    assert calibrate.main(["--project", str(recorded), "--live", "--quiet"]) == 1
    assert "FAIL mentions_online: uncalibrated (needs 4 more good / 4 more defect rows)" in capsys.readouterr().out
    assert run(recorded) == 0
    assert "mentions_online: uncalibrated (needs 4 more good / 4 more defect rows)" in report(recorded, "md")


def test_a_criterion_labelled_enough_is_calibrated_on_its_own_rows(recorded, capsys):
    rows = [labelled(f"good-{i}", "good", f"Edit {i} syncs once online.") for i in range(5)] + \
        [labelled(f"defect-{i}", "defect", f"Edit {i} syncs later.") for i in range(5)]
    calibrated_project(recorded, rows)
    calibrate.main(["--project", str(recorded), "--live", "--quiet"])
    result = json.loads((recorded / "runs" / "calibration+lexical.json").read_text())
    assert result["metrics"]["mentions_online"]["calibrated"] and result["metrics"]["mentions_online"]["kappa"] == 1
    assert "mentions_online" not in result["gate_failed"]


def test_a_labelled_row_naming_no_declared_criterion_is_refused(recorded, capsys):
    calibrated_project(recorded, [{**labelled("x", "good", "Online."), "metric": "polite"}])
    assert calibrate.main(["--project", str(recorded), "--live", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "calibrate.py: calibration.json: cases[0] (x).metric: unknown metric 'polite' (valid: faithfulness, "
        "faithfulness_strict, contextual_recall, answer_relevancy, facts, abstained, ignored_planted, mentions_online, "
        "on_topic; a criterion is declared in evals.toml as [criteria.NAME])\n")


def test_a_second_judge_is_compared_on_a_criterion_at_its_own_threshold():
    from whichstage.analysis import second_judge as judges

    def report(judge: str, score: float) -> dict:
        return {"key": {"judge": judge}, "rows": [{"id": "a", "criteria": {"polite": 0.5},
                                                   "judged": {"polite": {"score": score}}}]}

    found = judges.compared(report("one", 0.6), report("two", 0.4))  # 0.6 passes at 0.5, 0.4 does not
    assert found["stages"]["polite"]["split"] == [{"id": "a", "first": 0.6, "second": 0.4}]


def test_a_criterion_without_its_own_threshold_takes_the_projects(tmp_path):
    from whichstage.project.config import load

    (tmp_path / "evals.toml").write_text('agent = "agent:build"\nthreshold = 0.8\n[thresholds]\nfaithfulness = 0.9\n'
                                         '[criteria.polite]\nrubric = "Thanks the user."\n'
                                         '[criteria.brief]\nrubric = "Is short."\nthreshold = 0.5\n')
    project = load(tmp_path)
    assert [project.threshold_of(s) for s in ("polite", "brief", "faithfulness", "answer_relevancy")] == \
        [0.8, 0.5, 0.9, 0.8]

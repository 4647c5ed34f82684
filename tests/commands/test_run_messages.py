"""Log lines that say one thing: a live run with nothing to record, --rerecord after an interrupted run, and
one errored case counted in the singular in a report and in calibration. Offline, on a copy of the project."""
import json
from pathlib import Path

from whichstage._util.exits import Exit
from whichstage.scoring.summary import summarize
from whichstage.analysis import calibration as calibrate
from whichstage._util.files import write_atomic
from whichstage.recording.store import Cassette
from whichstage.cli import run as evaluate

from conftest import OFFLINE_RUN, interrupt_after_runs, edit_json as edit
from whichstage.render.markdown import markdown


HERE = Path(__file__).parents[2]
JOURNAL = f"recordings/.{OFFLINE_RUN}.partial.jsonl"


def entries_in(project: Path) -> int:
    return len(json.loads((project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"])


def test_a_live_run_with_nothing_missing_says_only_that(live_project, monkeypatch, capsys):
    edit(live_project / "cases.json", lambda cases: cases["cases"][0].update(question="Where is my data kept?"))
    with monkeypatch.context() as m:
        def killed_before_the_journal_was_removed(self, keep=None) -> bool:
            write_atomic(self.path, self.dumps())
            return True
        m.setattr(Cassette, "save", killed_before_the_journal_was_removed)
        assert evaluate.main(["--live", "--quiet"]) == 0
    assert (live_project / JOURNAL).is_file()  # every entry it holds is in the recording too
    capsys.readouterr()
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert capsys.readouterr().err.splitlines() == \
        [f"recorded 0 new entries, kept {entries_in(live_project)}: nothing to write"]
    assert not (live_project / JOURNAL).exists()


def test_rerecord_after_an_interrupted_run_calls_every_entry_again_and_resumes_nothing(sample_project,
                                                                                       fake_models, capsys):
    interrupt_after_runs(fake_models, 3)
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == Exit.INTERRUPTED
    assert (sample_project / JOURNAL).is_file()
    capsys.readouterr()
    fake_models.reset()
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == 0
    err = capsys.readouterr().err
    traces = [n for n in json.loads((sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
              if n.startswith("agent/")]
    assert len(fake_models.runs()) == len(traces) and "resuming" not in err  # every case of every split, and counterfactuals
    assert err.splitlines()[0].startswith("--rerecord: calling the models for every entry again; the ")
    assert err.splitlines()[0].endswith(" entries an interrupted run kept are dropped")


def test_a_report_with_one_errored_case_says_case_and_is(capsys):
    report = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.json").read_text())
    for n, verb in [(1, "case errored and is"), (2, "cases errored and are")]:
        for row in report["rows"][:n]:
            row["first_failure"] = "error"
        report["summary"] = summarize(report["rows"], report["k"])
        assert f" {n} {verb} not scored." in markdown(report)


def test_calibration_with_one_errored_case_says_case(live_project, fake_models, capsys):
    edit(live_project / "calibration-cases.json",
         lambda cases: cases["cases"][0].update(answer=cases["cases"][0]["answer"] + " Really."))
    answer = json.loads((live_project / "calibration-cases.json").read_text())["cases"][0]["answer"]
    fake_models.fail(lambda call: call.kind == "judge" and answer in call.text, ValueError("the judge refused"))
    assert calibrate.main(["--live", "--quiet"]) == Exit.INCOMPLETE
    assert capsys.readouterr().err.splitlines()[-1] == "calibrate.py: incomplete: 1 case errored; run --live again"

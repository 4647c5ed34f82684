"""What a resuming run says of the run before it: incomplete, not interrupted, when it ended incomplete;
interrupted when a resumed run was killed in turn; one entry in the singular."""
import json

from whichstage._util.exits import Exit
from conftest import edit_cases, failing_judge
from whichstage.cli import run as evaluate
from whichstage.recording.store import Cassette, Mode


def test_a_run_after_an_incomplete_one_says_it_was_incomplete_not_interrupted(live_project, fake_models, capsys):
    edit_cases(live_project, lambda d: d["cases"][0].update(question=d["cases"][0]["question"] + " Please."))
    question = json.loads((live_project / "cases.json").read_text())["cases"][0]["question"]
    failing_judge(fake_models, question)
    assert evaluate.main(["--live", "--quiet"]) == Exit.INCOMPLETE
    capsys.readouterr()
    fake_models.reset()  # the judge answers again
    assert evaluate.main(["--live", "--quiet"]) == 0
    said = capsys.readouterr().err
    assert "an interrupted run" not in said
    assert "from the last run (not interrupted: it ended incomplete, 1 case errored) are kept" in said


def test_a_run_resumed_after_an_incomplete_one_and_then_interrupted_says_interrupted(tmp_path):
    path = tmp_path / "tape.json"
    first = Cassette(path, {"model": "m"}, Mode.LIVE)
    first.get("a", lambda value: {}, lambda: 1)
    first.incomplete("1 case errored")
    first.close()
    second = Cassette(path, {"model": "m"}, Mode.LIVE)
    second.get("b", lambda value: {}, lambda: 2)
    second.close()  # killed: no end noted
    third = Cassette(path, {"model": "m"}, Mode.LIVE)
    assert third.notes == [f"resuming: 2 entries from an interrupted run are kept (in {third.journal})"]


def test_one_entry_is_counted_in_the_singular(tmp_path):
    path = tmp_path / "tape.json"
    first = Cassette(path, {"model": "m"}, Mode.LIVE)
    first.get("a", lambda value: {}, lambda: 1)
    first.close()
    resumed = Cassette(path, {"model": "m"}, Mode.LIVE)
    assert resumed.notes == [f"resuming: 1 entry from an interrupted run is kept (in {resumed.journal})"]

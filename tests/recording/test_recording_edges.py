"""The recording's edges: what a second judge reuses, who may write a recording at once, what a resuming run
says of the run before it, what a grader-only edit costs, and which pages a stale replay names."""
import json
import os

import pytest

from whichstage.cli import run as evaluate
from whichstage.recording.store import Cassette, Mode
from whichstage._util.files import RecordingError
from whichstage.recording.lock import hold
from conftest import OFFLINE_RUN, serial_judge
from whichstage.providers import build as providers

SECOND = "gemini-3.8-flash"


def recording_of(folder):
    return folder / "recordings" / f"{OFFLINE_RUN}.json"


def edit_cases(folder, change) -> None:
    path = folder / "cases.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def failing_judge(fake_models, question: str) -> None:
    """The offline judge fails, for good, on every request that quotes `question` (the case's answer relevancy
    and contextual precision): the case errors."""
    fake_models.fail(lambda call: call.model == "lexical" and question in call.text, ValueError("the judge refused"))


# ---- --judge2 ---------------------------------------------------------------------------------------------

def test_a_second_judge_reuses_the_traces_an_incomplete_first_pass_kept(live_project, shared_ssl_contexts,
                                                                       fake_models, capsys):
    from whichstage.standins import gemini as gemini_standin
    from whichstage.standins.gemini import serve

    recording_of(live_project).unlink()  # every trace is paid for by this run's first pass
    edit_cases(live_project, lambda d: d.update(cases=[c for c in d["cases"] if c["id"] in ("backup", "issue-212")]))
    failing_judge(fake_models, json.loads((live_project / "cases.json").read_text())["cases"][0]["question"])
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, gemini_standin)
        with serve(models=[SECOND]) as standin:
            mp.setenv("GOOGLE_API_KEY", "test")
            mp.setenv(providers.GEMINI_URL_VARIABLE, standin.url)
            code = evaluate.main(["--live", "--quiet", "--judge2", SECOND])
    assert code == evaluate.EXIT_INCOMPLETE, capsys.readouterr().err  # the first judge left backup errored
    runs = fake_models.runs()
    assert sorted(runs) == sorted(set(runs)) and len(runs) == 2  # each trace once: the second pass paid for none


# ---- merge and the live run's lock ------------------------------------------------------------------------

def test_merge_refuses_while_a_live_run_holds_the_recording(live_project, capsys):
    for shard in ("1/2", "2/2"):
        assert evaluate.main(["--live", "--quiet", "--shard", shard]) == 0
    shards = sorted(str(p) for p in (live_project / "recordings").glob("*.shard-*-of-2.json"))
    before = recording_of(live_project).read_bytes()
    capsys.readouterr()
    live = hold(recording_of(live_project))  # as a live run of the project's recording holds it
    try:
        assert evaluate.main(["merge", *shards]) == 2
    finally:
        live.close()
    err = capsys.readouterr().err
    assert err.startswith(f"evaluate.py: merge: recordings/{OFFLINE_RUN}.json: another live run is recording it (pid ")
    assert recording_of(live_project).read_bytes() == before


def test_a_live_run_refuses_while_a_merge_holds_the_recording(live_project, capsys):
    merging = hold(recording_of(live_project), "merge")
    try:
        assert evaluate.main(["--live", "--quiet"]) == 2
    finally:
        merging.close()
    assert f"{OFFLINE_RUN}.json: a merge of its shards is writing it (pid " in capsys.readouterr().err


def test_a_lock_held_elsewhere_as_an_older_portalocker_says_it_names_its_holder(tmp_path, monkeypatch):
    import errno

    import portalocker

    from whichstage.recording import lock

    path = tmp_path / "tape.json"
    holding = hold(path, "merge")
    holding.close()  # its holder's line stays in the lock file

    def held(handle, flags):  # portalocker 2: contention as a plain LockException, the system's error its cause
        raise portalocker.LockException("locked") from OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
    monkeypatch.setattr(lock.portalocker, "lock", held)
    with pytest.raises(RecordingError, match=rf"tape\.json: a merge of its shards is writing it \(pid {os.getpid()}, "):
        hold(path)


# ---- what a resuming run says of the last one ------------------------------------------------------------

def test_a_run_after_an_incomplete_one_says_it_was_incomplete_not_interrupted(live_project, fake_models, capsys):
    edit_cases(live_project, lambda d: d["cases"][0].update(question=d["cases"][0]["question"] + " Please."))
    question = json.loads((live_project / "cases.json").read_text())["cases"][0]["question"]
    failing_judge(fake_models, question)
    assert evaluate.main(["--live", "--quiet"]) == evaluate.EXIT_INCOMPLETE
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


# ---- a grader-only edit -----------------------------------------------------------------------------------

def expect_a_search_too(data: dict) -> None:
    case = next(c for c in data["cases"] if c["id"] == "issue-212")
    case["expected_tools"] = ["get_issue", "search_docs"]


def test_an_edit_to_expected_tools_alone_is_rescored_at_replay(here, capsys):
    edit_cases(here, expect_a_search_too)
    assert evaluate.main(["--model", "rules"]) == 0, capsys.readouterr().err
    report = json.loads((here / "runs" / f"{OFFLINE_RUN}.json").read_text())
    tools = next(r for r in report["rows"] if r["id"] == "issue-212")["tools"]
    assert tools["missing"] == ["search_docs"] and tools["deepeval"]["score"] == 0.5  # scored on the new list


def test_a_live_run_after_an_expected_tools_edit_records_one_entry(live_project, capsys):
    edit_cases(live_project, expect_a_search_too)
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert "recorded 1 new entry, kept " in capsys.readouterr().err


# ---- which pages changed ----------------------------------------------------------------------------------

def edit_first_page(folder) -> str:
    path = folder / "docs.json"
    pages = json.loads(path.read_text())
    pages[0]["text"] += " Edited."
    path.write_text(json.dumps(pages, indent=2))
    return pages[0]["id"]


def test_a_stale_replay_names_the_page_that_changed(here, capsys):
    page = edit_first_page(here)
    assert evaluate.main(["--model", "rules"]) == 2
    assert f"(pages changed ({page} edited))" in capsys.readouterr().err


def test_the_plan_names_the_page_that_changed(live_project, capsys):
    page = edit_first_page(live_project)
    assert evaluate.main(["--live", "--plan"]) == 0
    out = capsys.readouterr().out
    assert "  agent runs: " in out and f"(pages changed ({page} edited): " in out


def test_changed_parts_are_named_a_few_then_counted():
    from whichstage.recording.store import parts_changed

    old = {"a": "1", "b": "2", "c": "3", "d": "4"}
    new = {"a": "1", "b": "9", "c": "8", "e": "5", "f": "6"}
    assert parts_changed(old, new) == "b edited, c edited, e added, and 2 more"  # f added, d removed
    assert parts_changed(old, dict(reversed(old.items()))) == "the same ones, in another order"


def test_a_first_recording_says_it_wrote_the_pages_index_beside_its_entries(tmp_path, monkeypatch, capsys):
    from conftest import OFFLINE
    from whichstage.cli import run as evaluate, init
    from whichstage.recording.format import read_recording

    assert init.main([str(tmp_path / "p")]) == 0
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    assert evaluate.main(["--project", str(tmp_path / "p"), "--live", "--quiet"]) == 0
    said = capsys.readouterr().err.strip().splitlines()[-1]
    [recording] = (tmp_path / "p" / "recordings").glob("*.json")
    entries = read_recording(recording)["entries"]
    assert "index/pages" in entries
    assert said.startswith(f"recorded {len(entries) - 1} new entries and the pages' index, kept 0: wrote ")

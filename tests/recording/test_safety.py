"""Nothing paid is lost, nothing half-written: damaged journals and recordings, two runs at once, signals at
awkward moments, hand-edited values, and bounds. Each test names the failure it guards against."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from whichstage._util.exits import Exit
from whichstage.cli import run as evaluate
from whichstage.run import pipeline
from whichstage.recording.store import Cassette, Mode
from whichstage._util.files import write_atomic
from conftest import OFFLINE, OFFLINE_RUN, Forked, interrupt_after_runs, load_project
from whichstage.run.entries import sha
from whichstage._util.jsontext import loads
from whichstage.calls.pool import Pool

HERE = Path(__file__).parents[2]


def journal_of(project: Path) -> Path:
    return project / "recordings" / f".{OFFLINE_RUN}.partial.jsonl"


def recording_of(project: Path) -> Path:
    return project / "recordings" / f"{OFFLINE_RUN}.json"


def whole_entries(journal: Path) -> set[str]:
    """The entry names of the journal's lines that parse."""
    names = set()
    for line in journal.read_text().splitlines()[1:]:
        try:
            names.add(json.loads(line)["entry"])
        except (ValueError, KeyError, TypeError):
            pass
    return names


def one_line(err: str) -> str:
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


# ---- 1, 2: the journal --------------------------------------------------------------------------------------

def test_a_torn_journal_line_costs_that_line_only(sample_project, fake_models, capsys):
    journal = journal_of(sample_project)
    interrupt_after_runs(fake_models, 4)
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == Exit.INTERRUPTED
    journal.write_bytes(journal.read_bytes()[:-40])  # a kill -9 or a full disk in the middle of the last line
    torn = journal.read_text().splitlines()[-1]
    fake_models.reset()
    interrupt_after_runs(fake_models, 4)
    assert evaluate.main(["--live", "--quiet", "--concurrency", "1"]) == Exit.INTERRUPTED
    err = capsys.readouterr().err
    assert "kept aside" in err and "1 damaged line" in err
    kept = whole_entries(journal)  # what the second run keeps: the first run's whole lines and its own
    assert all(json.loads(line) for line in journal.read_text().splitlines())  # every line whole again
    aside = [p for p in journal.parent.iterdir() if ".damaged-" in p.name]
    assert len(aside) == 1 and aside[0].read_text() == torn + "\n"
    fake_models.reset()
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert f"resuming: {len(kept)} entries from an interrupted run are kept" in capsys.readouterr().err
    paid_again = {f"agent/{c['id']}" for c in json.loads((sample_project / "cases.json").read_text())["cases"]
                  if c["question"] in fake_models.runs()}
    assert not paid_again & kept  # nothing the journal kept is paid for twice


@pytest.mark.parametrize("damage", ["header", "empty"])
def test_a_damaged_or_empty_journal_is_never_deleted_for_other_models(live_project, fake_models, capsys, damage):
    journal = journal_of(live_project)
    interrupt_after_runs(fake_models, 3)
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == Exit.INTERRUPTED
    capsys.readouterr()
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("{not json\n" + "".join(lines[1:]) if damage == "header" else "")
    damaged = journal.read_text()
    fake_models.reset()
    assert evaluate.main(["--live", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "recorded with other models" not in err
    if damage == "header":
        aside = [p for p in journal.parent.iterdir() if ".unreadable-header-" in p.name]
        assert len(aside) == 1 and aside[0].read_text() == damaged  # every paid line is still on disk
        assert f"kept aside recordings/{aside[0].name}: its first line is not a readable header" in err


# ---- 3, 4, 5: the recording ---------------------------------------------------------------------------------

def test_a_corrupt_recording_is_refused_not_paid_for_again(sample_project, fake_models, capsys):
    path = recording_of(sample_project)
    path.write_bytes(path.read_bytes()[:1000])
    damaged = path.read_bytes()
    assert evaluate.main(["--live", "--quiet"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"evaluate.py: recordings/{OFFLINE_RUN}.json: malformed JSON at line ")
    assert line.endswith("start over deliberately with --rerecord")
    assert fake_models.runs() == [] and path.read_bytes() == damaged
    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == 0  # deliberately
    assert json.loads(path.read_text())["entries"]


def test_a_second_live_run_on_the_same_recording_exits_2_naming_the_first(live_project, capsys):
    header = json.loads(recording_of(live_project).read_text())["key"]
    first = Cassette(recording_of(live_project), {k: v for k, v in header.items() if k != "format"}, Mode.LIVE)
    try:
        assert evaluate.main(["--live", "--quiet"]) == 2
        line = one_line(capsys.readouterr().err)
        assert f"another live run is recording it (pid {os.getpid()}, since " in line
    finally:
        first.close()
    assert evaluate.main(["--live", "--quiet"]) == 0  # released: the next run goes ahead


def test_a_file_system_without_locks_exits_2_naming_the_lock_file(live_project, monkeypatch, capsys):
    import errno

    import portalocker

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    monkeypatch.setattr(portalocker.portalocker, "LOCKER", no_locks)  # the system call portalocker makes
    assert evaluate.main(["--live", "--quiet"]) == 2
    assert one_line(capsys.readouterr().err) == (f"evaluate.py: recordings/.{OFFLINE_RUN}.lock: cannot take the live "
                                                 f"run's lock: {os.strerror(errno.ENOLCK)}")


def test_a_recomputed_entry_equal_to_the_files_but_of_other_types_is_written(tmp_path):
    path, header = tmp_path / "r.json", {"cases": "c", "model": "m", "embedder": "e", "judge": "j"}
    path.write_text(json.dumps({"key": {"format": 2, **header},  # one JSON document, not the line layout
                                "entries": {"a": {"deps": {}, "value": {"n": 1, "ok": True}}}}, indent=2))
    tape = Cassette(path, header, Mode.RERECORD)
    assert tape.get("a", lambda value: {}, lambda: {"ok": 1, "n": 1.0}) == {"ok": 1, "n": 1.0}
    assert tape.save() is True  # 1 == True and 1.0 == 1, yet the file would not hold what the run used
    value = json.loads(path.read_text())["entries"]["a"]["value"]
    assert list(value.items()) == [("ok", 1), ("n", 1.0)] and type(value["ok"]) is int


def test_two_live_processes_never_both_pay(live_project, fake_models, capsys):
    """A second live run (here, in this process) on a recording another process is recording exits 2 before
    any call. Event-based: the second starts once the first has journaled a paid entry, and the first is asked
    for far more work than it can finish meanwhile (it is stopped afterwards), so the two always overlap however
    slow the machine."""
    env = {**os.environ, **OFFLINE, "DOCS_OFFLINE_LATENCY_MS": "20"}
    first = Forked(live_project, env, "--live", "--rerecord", "--quiet", "--repeats", "100")
    try:
        journal, guard = journal_of(live_project), time.monotonic() + 240
        while not (journal.exists() and journal.read_text().strip()):
            assert first.poll() is None and time.monotonic() < guard, "the first run ended, or paid nothing"
            time.sleep(0.05)
        second = evaluate.main(["--live", "--quiet"])
        assert first.poll() is None  # still recording: the two overlapped
        assert second == 2 and "another live run is recording it" in capsys.readouterr().err
        assert fake_models.calls == []  # before any call
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=240)
    assert first.returncode == 143  # it was recording until it was stopped


def test_names_that_map_to_the_same_characters_get_files_of_their_own():
    from whichstage.run.files import file_part, run_name

    assert file_part("m:1") != file_part("m-1") and file_part("m/1") != file_part("m:1")
    assert run_name("c", "m:1", "e", "j") != run_name("c", "m-1", "e", "j")
    assert file_part("rules") == "rules" and file_part("m\x001").isprintable()


def test_a_recording_of_other_models_is_never_replaced(live_project, capsys):
    path = recording_of(live_project)
    data = json.loads(path.read_text())
    data["key"]["model"] = "m:1"  # as if another name had mapped to this file
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    assert evaluate.main(["--live", "--quiet"]) == 2
    assert "holds the recording of model 'm:1', not model 'rules'" in one_line(capsys.readouterr().err)
    assert path.read_bytes() == before


# ---- 6, 7: signals --------------------------------------------------------------------------------------------

def test_a_signal_while_work_is_queued_stops_the_run_and_says_what_is_kept(live_project):
    # Waits on events (journal lines, the child's exit), never on the machine's speed: the bounds are hang guards.
    env = {**os.environ, **OFFLINE, "DOCS_OFFLINE_LATENCY_MS": "20"}
    child = Forked(live_project, env, "--live", "--rerecord", "--quiet", "--repeats", "100")
    journal, guard = journal_of(live_project), time.monotonic() + 240
    while not (journal.exists() and len(journal.read_text().splitlines()) > 3):
        assert child.poll() is None and time.monotonic() < guard, "the run ended, or wrote nothing, before the signal"
        time.sleep(0.05)
    child.send_signal(signal.SIGTERM)
    try:
        err = child.communicate(timeout=240)[1]
    except subprocess.TimeoutExpired:
        child.kill()
        raise
    assert child.returncode == 143
    last = err.strip().splitlines()[-1]
    assert last.startswith("evaluate.py: terminated: ") and "Traceback" not in err and "cannot schedule" not in err
    said = int(last.split("terminated: ")[1].split()[0])
    assert said == len(whole_entries(journal)) > 0  # what it says is kept is what is kept
    cases = len(json.loads((live_project / "cases.json").read_text())["cases"])
    assert said < cases * 100  # stopped: not the 100 runs of every case it was asked for


def test_the_pool_draws_work_lazily_and_starts_nothing_after_an_interruption():
    drawn, started, peak, running, lock = [], [], [0], [0], threading.Lock()

    def task(i):
        def work():
            with lock:
                started.append(i)
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.001)
            with lock:
                running[0] -= 1
            if i == 50:
                raise KeyboardInterrupt
        return work

    def tasks():
        for i in range(10_000):
            drawn.append(i)
            yield task(i)

    pool = Pool(4)
    pool.feed(tasks())
    with pytest.raises(KeyboardInterrupt):
        pool.run()
    assert peak[0] <= 4 and len(drawn) < 100  # never all 10,000 queued at once
    pool.submit(lambda: started.append("late"))  # a follow-up after the interruption is dropped
    assert "late" not in started and len(started) <= len(drawn)


def test_a_call_that_lands_after_its_run_ended_journals_nothing(tmp_path):
    """A run stopped in the calling process (the Python API) returns while a call may still be running: what it
    said it kept is what the journal holds, as when a process exits."""
    header = {"cases": "c", "model": "m", "embedder": "e", "judge": "j"}
    tape, running, land = Cassette(tmp_path / "r.json", header, Mode.LIVE), threading.Event(), threading.Event()
    tape.get("first", lambda value: {}, lambda: 1)

    def slow():
        running.set()
        land.wait(60)
        return 2
    straggler = threading.Thread(target=tape.get, args=("second", lambda value: {}, slow))
    straggler.start()
    running.wait(60)
    said = tape.end()  # the run returns, saying what it kept
    land.set()
    straggler.join(60)
    tape.close()
    assert said == 1 and [json.loads(line).get("entry") for line in tape.journal.read_text().splitlines()[1:]] == \
        ["first"]


def test_a_signal_just_after_the_rename_leaves_the_file_written(tmp_path, monkeypatch):
    from whichstage._util import files

    real = os.replace

    def replaced_then_interrupted(src, dst):
        real(src, dst)
        raise KeyboardInterrupt
    monkeypatch.setattr(files.os, "replace", replaced_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "report.md", "whole\n")
    assert (tmp_path / "report.md").read_text() == "whole\n" and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_ctrl_c_during_start_up_imports_prints_one_line(project):
    probe = ("import builtins, runpy\n"
             "real = builtins.__import__\n"
             "def interrupted(name, *args, **kwargs):\n"
             "    if name == 'whichstage.project.validate':\n"
             "        raise KeyboardInterrupt\n"
             "    return real(name, *args, **kwargs)\n"
             "builtins.__import__ = interrupted\n"
             "runpy.run_path('evaluate.py', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode in (130, -signal.SIGINT)
    assert done.stderr == "evaluate.py: interrupted\n"


def test_sigterm_during_a_replay_does_not_say_to_run_live(here, monkeypatch, capsys):
    from whichstage.render import html as html_report

    real = html_report.html_parts

    def terminated(*args):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the replay writes its reports
        return real(*args)
    monkeypatch.setattr(html_report, "html_parts", terminated)
    assert evaluate.main([]) == Exit.TERMINATED
    assert capsys.readouterr().err == "evaluate.py: terminated\n"


# ---- 8: recorded values ---------------------------------------------------------------------------------------

EDITS = [
    ("agent/backup", lambda item: item.update(value=None), "value: expected an object (a trace), got null"),
    ("agent/backup", lambda item: item["value"].update(answer=123), "value.answer: expected a string, got 123"),
    ("judge/backup/faithfulness", lambda item: item["value"].update(score="high"),
     "value.score: expected a number, got 'high'"),
    ("agent/backup", lambda item: item["value"].update(tool_outputs=None),
     "value.tool_outputs: expected a list, got null"),
    ("tools/backup", lambda item: item.pop("value"), "value: missing"),
    ("ladder/backup/vector", lambda item: item.update(value=[1]), "value[0]: expected a page id, got int"),
]


@pytest.mark.parametrize("entry, edit, message", EDITS)
def test_a_hand_edited_recorded_value_is_refused_naming_file_entry_and_field(here, capsys, entry, edit, message):
    path = recording_of(here)
    data = json.loads(path.read_text())
    edit(data["entries"][entry])
    path.write_text(json.dumps(data))
    assert evaluate.main([]) == 2
    assert one_line(capsys.readouterr().err) == \
        f"evaluate.py: recordings/{OFFLINE_RUN}.json: entries[{entry}].{message}"


def test_a_recorded_entry_nested_too_deeply_is_refused_not_a_traceback_later(here, capsys):
    path = recording_of(here)  # in the line layout, read entry by entry: an argument nested 990 deep
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith('  "agent/backup": '))
    assert '"args": {' in lines[at]
    lines[at] = lines[at].replace('"args": {', '"args": {"deep": ' + "[" * 990 + "]" * 990 + ", ", 1)
    path.write_text("".join(lines))
    assert evaluate.main([]) == 2
    assert one_line(capsys.readouterr().err) == \
        f"evaluate.py: recordings/{OFFLINE_RUN}.json: entries[agent/backup]: malformed JSON"


ODD_VALUES = [{"a": [1, 2.5, "\u00e9", None, True], "b": {}}, float("nan"), [float("inf"), -0.0], 2 ** 64,
              -(2 ** 63) - 1, 2 ** 62, 123456789012345678901234567890, "\ud800", 0.1 + 0.2, 1e-320,
              {"text": "call 1234567890123456789012 now"}, [[[[1]]]]]


@pytest.mark.parametrize("value", ODD_VALUES)
def test_the_quick_reader_reads_what_json_reads(value):
    text = json.dumps({"deps": {}, "value": value})
    assert json.dumps(loads(text)) == json.dumps(json.loads(text))


@pytest.mark.parametrize("text", ['{"a": }', "[1,]", "", "[" * 1000 + "]" * 1000, '"\udc80\ud800"x'])
def test_the_quick_reader_refuses_what_json_refuses_with_its_error(text):
    with pytest.raises(Exception) as expected:
        json.loads(text)
    with pytest.raises(expected.type) as got:
        loads(text)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("value", [*ODD_VALUES, "tab\there \"quoted\" \\ \u2028 \x7f", {"b": [{"z": 1, "a": 2}], "a": ""},
                                   {2: "int keys", 1: None}, [], {}, ""])
def test_an_entry_key_hashes_json_dumps_with_sorted_keys(value):
    # every recorded entry's deps are these hashes: a quicker encoder must not change one
    assert sha(value) == hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def test_an_entry_key_of_what_json_cannot_hold_raises_as_json_does():
    for value in ({"a": {1j}}, [object()], {(1, 2): 3}):
        with pytest.raises(TypeError):
            json.dumps(value, sort_keys=True)
        with pytest.raises(TypeError):
            sha(value)


def test_a_hand_edited_journal_value_is_refused_naming_the_line(live_project, fake_models, capsys):
    interrupt_after_runs(fake_models, 2)
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == Exit.INTERRUPTED
    capsys.readouterr()
    journal = journal_of(live_project)
    lines = journal.read_text().splitlines()
    item = json.loads(lines[1])
    item["value"] = None
    journal.write_text("\n".join([lines[0], json.dumps(item), *lines[2:]]) + "\n")
    assert evaluate.main(["--live", "--quiet"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"evaluate.py: recordings/.{OFFLINE_RUN}.partial.jsonl: line 2 ({item['entry']}): value")


def test_a_hand_edited_calibration_score_is_refused(here, capsys):
    from whichstage.analysis import calibration as calibrate

    path = here / "recordings" / "calibration+lexical.json"
    data = json.loads(path.read_text())
    name = next(iter(data["entries"]))
    data["entries"][name]["value"]["score"] = "high"
    path.write_text(json.dumps(data))
    assert calibrate.main([]) == 2
    assert one_line(capsys.readouterr().err) == \
        f"calibrate.py: recordings/calibration+lexical.json: entries[{name}].value.score: expected a number, got 'high'"


# ---- 10: bounds -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--repeats", "101"], ["--concurrency", "65"], ["--repeats", "0"]])
def test_options_past_their_bounds_are_refused(args, capsys):
    with pytest.raises(SystemExit) as exited:
        evaluate.main(args)
    assert exited.value.code == 2 and "must be from 1 to" in capsys.readouterr().err


def test_a_stale_message_stays_one_readable_line_however_many_runs_are_stale(tmp_path):
    cassette = Cassette.__new__(Cassette)
    cassette.path = tmp_path / "x.json"
    stale = {f"case-{c}": {f"question changed in run {r}": None for r in range(2, 2002)} for c in range(40)}
    text = pipeline.stale_message(cassette, stale, 50)
    assert len(text) - len(str(cassette.path)) < 650 and "\n" not in text
    assert "and 1,997 more" in text and "and 35 more cases" in text


# ---- 9: stray files, names and outputs ------------------------------------------------------------------------

def test_a_stray_file_in_recordings_does_not_block_a_replay(here, capsys):
    (here / "recordings" / "notes.json").write_text("{}")
    assert evaluate.main(["--model", "rules"]) == 0
    assert evaluate.main([]) == 0
    (here / "recordings" / f"{OFFLINE_RUN.split('+')[0]}+stray.json").write_text("{}")  # named as one of ours
    capsys.readouterr()
    assert evaluate.main([]) == 2
    assert one_line(capsys.readouterr().err).endswith("stray.json: not a recording (expected 'key' and 'entries')")


def test_a_model_name_with_a_newline_or_a_nul_stays_one_line(here, capsys):
    assert evaluate.main(["--model", "a\nb"]) == 2
    assert "model 'a\\nb'" in one_line(capsys.readouterr().err)
    path = recording_of(here)
    data = json.loads(path.read_text())
    data["key"]["model"] = "rules\x00"
    (here / "recordings" / f"{OFFLINE_RUN.split('+')[0]}+nul.json").write_text(json.dumps(data))
    assert evaluate.main(["--model", "rules\x00"]) in (0, 2)  # either replayed or refused: never a traceback
    assert "Traceback" not in capsys.readouterr().err


def test_stdout_that_cannot_be_written_exits_2_in_one_line(project):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    load_project(project)  # the agent's tools read into the copy's .cache, as its first replay would
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "evaluate.py"], cwd=project, stdout=full, stderr=subprocess.PIPE,
                              text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stderr == "evaluate.py: stdout: cannot write: No space left on device\n"


def test_a_full_disk_while_journaling_names_the_journal(live_project, monkeypatch, capsys):
    import builtins
    import errno

    real_open = builtins.open

    def full(file, mode="r", *args, **kwargs):
        if str(file).endswith(".partial.jsonl") and mode == "a":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(file, mode, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", full)
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == 2
    assert one_line(capsys.readouterr().err.splitlines()[-1]) == \
        f"evaluate.py: recordings/.{OFFLINE_RUN}.partial.jsonl: cannot write: No space left on device"

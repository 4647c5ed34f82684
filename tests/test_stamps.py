"""A recording whose very bytes passed the shape checks once is read unchecked until a byte of it, the check or
the reader changes; one without such a stamp is checked whole when opened, and stamped."""
import json
import shutil
from pathlib import Path

import pytest

from whichstage import evaluate
from whichstage.cassette import Cassette, Mode
from conftest import OFFLINE, OFFLINE_RUN
from whichstage import shapes


def stamp_of(project: Path) -> Path:
    return project / ".cache" / "checked" / OFFLINE_RUN


def recording_of(project: Path) -> Path:
    return project / "recordings" / f"{OFFLINE_RUN}.json"


def entries_in(project: Path) -> int:
    return len(json.loads(recording_of(project).read_text())["entries"])


@pytest.fixture
def checks(monkeypatch) -> list[str]:
    """The entries the shape check is asked about, in order."""
    asked, check = [], shapes.problem

    def counted(entry, value):
        asked.append(entry)
        return check(entry, value)
    monkeypatch.setattr(shapes, "problem", counted)
    return asked


@pytest.fixture
def offline(here, monkeypatch) -> Path:
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    return here


def reports(project: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted((project / "runs").iterdir())}


def test_a_replay_checks_every_entry_stamps_the_recording_and_the_next_replay_reads_it_unchecked(offline, checks):
    assert not stamp_of(offline).exists()
    assert evaluate.main(["--quiet"]) == 0
    assert len(checks) == entries_in(offline) and stamp_of(offline).exists()
    before, checks[:] = reports(offline), []
    assert evaluate.main(["--quiet"]) == 0
    assert checks == [] and reports(offline) == before


def test_a_byte_changed_after_the_stamp_is_checked_again_and_refused_naming_the_field(offline, capsys):
    assert evaluate.main(["--quiet"]) == 0 and stamp_of(offline).exists()
    path = recording_of(offline)
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith('  "agent/backup": '))
    item = json.loads(lines[at].split(": ", 1)[1].rstrip(",\n"))
    item["value"]["answer"] = 123
    lines[at] = f'  "agent/backup": {json.dumps(item)}' + (",\n" if lines[at].endswith(",\n") else "\n")
    path.write_text("".join(lines))
    capsys.readouterr()
    assert evaluate.main(["--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (f"evaluate.py: recordings/{OFFLINE_RUN}.json: entries[agent/backup]."
                                               "value.answer: expected a string, got 123")


def test_a_stamp_made_by_another_check_is_not_trusted(offline, checks, monkeypatch):
    assert evaluate.main(["--quiet"]) == 0
    checks[:] = []
    monkeypatch.setattr(evaluate, "code_of", lambda module: "an edited shapes.py")
    assert evaluate.main(["--quiet"]) == 0
    assert len(checks) == entries_in(offline)


def test_a_run_of_some_cases_checks_the_whole_recording_once_and_stamps_it(offline, checks):
    assert evaluate.main(["--quiet", "--case", "backup"]) == 0
    assert len(checks) == entries_in(offline) and stamp_of(offline).exists()



def test_a_live_run_that_writes_the_recording_stamps_what_it_wrote(live_project, checks):
    shutil.rmtree(live_project / "recordings")
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert stamp_of(live_project).exists()
    checks[:] = []
    assert evaluate.main(["--live", "--quiet"]) == 0  # nothing to do: the file it wrote, read unchecked
    assert evaluate.main(["--quiet"]) == 0
    assert checks == []


def test_a_live_run_with_nothing_to_do_stamps_the_file_it_read_whole(live_project, checks):
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert len(checks) == entries_in(live_project) and stamp_of(live_project).exists()


def test_a_written_recording_with_an_entry_that_fails_the_check_is_not_stamped(tmp_path):
    stamp = tmp_path / "stamp"
    tape = Cassette(tmp_path / "r.json", {"model": "m"}, Mode.LIVE, check=lambda entry, value: value.get("wrong"),
                    stamp=("v1", stamp))
    tape.get("a", lambda value: {}, lambda: {"answer": "fine"})
    tape.get("b", lambda value: {}, lambda: {"wrong": "answer: expected a string"})
    assert tape.save() and not stamp.exists()


def test_a_number_only_json_reads_exactly_reads_back_the_same_from_a_stamped_recording(tmp_path):
    path, stamp = tmp_path / "r.json", ("v1", tmp_path / "stamp")  # beyond 64 bits: orjson would read a float
    live = Cassette(path, {"model": "m"}, Mode.LIVE, check=lambda entry, value: None, stamp=stamp)
    live.get("a", lambda value: {}, lambda: {"tokens": 123456789012345678901})
    assert live.save() and stamp[1].exists()
    replay = Cassette(path, {"model": "m"}, Mode.REPLAY, check=lambda entry, value: None, stamp=stamp)
    assert replay.get("a", lambda value: {}) == {"tokens": 123456789012345678901}

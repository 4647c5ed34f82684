"""A recording whose very bytes passed the shape checks once is read unchecked until a byte of it, the check or
the reader changes; a run that did not read every entry, or read one only json reads, stamps nothing."""
import json
import shutil
from pathlib import Path

import pytest

from whichstage import evaluate, pipeline
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
    return {p.name: p.read_bytes() for p in sorted((project / "runs").iterdir()) if p.is_file()}  # not runs/history


def test_a_replay_that_read_every_entry_stamps_it_and_the_next_replay_reads_it_unchecked(offline, checks):
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
    monkeypatch.setattr(pipeline, "code_of", lambda module: "an edited shapes.py")
    assert evaluate.main(["--quiet"]) == 0
    assert len(checks) == entries_in(offline)


def test_a_run_of_some_cases_stamps_nothing(offline):
    assert evaluate.main(["--quiet", "--case", "backup"]) == 0
    assert not stamp_of(offline).exists()


def test_an_entry_only_json_reads_leaves_the_recording_unstamped(offline, checks):
    path = recording_of(offline)  # a count beyond 64 bits: orjson would read a float, so json reads the entry
    text = path.read_text()
    assert text.count('"input_tokens": ') >= 1
    path.write_text(text.replace('"input_tokens": ', '"input_tokens": 123456789012345678901', 1))
    assert evaluate.main(["--quiet"]) == 0
    assert not stamp_of(offline).exists()
    checks[:] = []
    assert evaluate.main(["--quiet"]) == 0
    assert len(checks) == entries_in(offline)


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


def test_a_live_run_of_some_cases_that_writes_the_recording_stamps_nothing(live_project):
    assert evaluate.main(["--live", "--rerecord", "--case", "backup", "--quiet"]) == 0  # the others kept unread
    assert not stamp_of(live_project).exists()


def test_a_live_run_that_rewrites_a_file_it_read_whole_checks_what_it_writes(live_project):
    path = recording_of(live_project)  # read as one JSON document, not line by line: its entries as objects
    data = json.loads(path.read_text())
    del data["entries"]["tools/backup"]  # one entry to record again, so the file is written
    data["entries"]["agent/backup"]["value"]["usage"]["input_tokens"] = 123456789012345678901  # orjson: a float
    path.write_text(json.dumps(data))
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert "tools/backup" in json.loads(path.read_text())["entries"]
    assert not stamp_of(live_project).exists()

"""A file that cannot be written (a baseline under /proc, a read-only runs/ or recordings/ folder, a
recording that cannot replace the old one): exit 2, one line naming the file, nothing half-written, and what
was paid for kept. Offline, on a copy of the project."""
import errno
import os
import tempfile
from pathlib import Path

import pytest

from whichstage._util import files as cassette_files
from whichstage.recording import journal as cassette_journal, lock as cassette_lock
from whichstage.cli import run as evaluate

from conftest import OFFLINE_RUN, edit_json as edit, outputs, one_line


JOURNAL = f"recordings/.{OFFLINE_RUN}.partial.jsonl"


def test_a_baseline_that_cannot_be_written_exits_2_naming_it(here, monkeypatch, capsys):
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # a baseline is of one run: the hash embedder's
    assert evaluate.main(["--label", "kept"]) == 0  # kept once: the same run under its label writes nothing
    capsys.readouterr()
    before = outputs(here)
    assert evaluate.main(["--save-baseline", "/proc/x", "--label", "kept"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err).startswith("evaluate.py: /proc/x: cannot write: ")
    assert out == "" and outputs(here) == before


def read_only(monkeypatch, folder: Path) -> None:
    """Make `folder` refuse new files as a read-only folder does for a user who is not root; chmod does not
    stop root, whom these tests may run as. Both ways files are made are refused: temp files and the journal."""
    real_mkstemp, real_open = tempfile.mkstemp, open

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() == folder.resolve():
            raise PermissionError(errno.EACCES, "Permission denied", str(Path(dir) / ".tmp"))
        return real_mkstemp(*args, dir=dir, **kwargs)

    def opener(file, mode="r", *args, **kwargs):
        if Path(file).resolve().parent == folder.resolve() and mode[0] in "wax":
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(cassette_files.tempfile, "mkstemp", mkstemp)
    for module in (cassette_lock, cassette_journal):  # the lock file, and the journal
        monkeypatch.setattr(module, "open", opener, raising=False)


@pytest.mark.parametrize("how", ["simulated", "chmod"])
def test_a_read_only_runs_folder_exits_2_naming_the_report(here, monkeypatch, capsys, how):
    for report in (here / "runs").iterdir():
        report.unlink()
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder; the simulated variant covers root")
        (here / "runs").chmod(0o555)
    else:
        read_only(monkeypatch, here / "runs")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # one run, so the first report it cannot write is this one
    try:
        assert evaluate.main([]) == 2
    finally:
        (here / "runs").chmod(0o755)
    out, err = capsys.readouterr()
    assert one_line(err) == f"evaluate.py: runs/{OFFLINE_RUN}.json: cannot write: Permission denied"
    assert out == "" and list((here / "runs").iterdir()) == []


def test_a_read_only_recordings_folder_exits_2_naming_the_first_file_it_cannot_write(live_project, monkeypatch,
                                                                                       capsys):
    edit(live_project / "cases.json", lambda cases: cases["cases"][0].update(question="Where is my data kept?"))
    before = outputs(live_project)
    read_only(monkeypatch, live_project / "recordings")
    assert evaluate.main(["--live", "--quiet", "--concurrency", "1"]) == 2
    out, err = capsys.readouterr()
    # the live run's lock comes first, before any call is paid for
    assert one_line(err) == f"evaluate.py: recordings/.{OFFLINE_RUN}.lock: cannot write: Permission denied"
    assert out == "" and outputs(live_project) == before


def test_a_recording_that_cannot_replace_the_old_one_exits_2_naming_it(sample_project, monkeypatch, capsys):
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst).parent.name == "recordings":
            raise PermissionError(errno.EACCES, "Permission denied", str(src), None, str(dst))
        return real_replace(src, dst)
    monkeypatch.setattr(cassette_files.os, "replace", replace)
    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err.splitlines()[-1]) == \
        f"evaluate.py: recordings/{OFFLINE_RUN}.json: cannot write: Permission denied"
    assert out == "" and [p.name for p in (sample_project / "recordings").glob(".*.tmp")] == []
    assert (sample_project / JOURNAL).is_file()  # what was paid for is kept for the next run

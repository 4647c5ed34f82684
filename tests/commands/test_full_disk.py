"""A full disk while a command writes its file (a report, a baseline, calibration's report, compare's page):
exit 2, one line naming the file, nothing half-written. Offline, on a copy of the project."""
import errno
import importlib
import os

import pytest

from whichstage._util import files as cassette_files
from whichstage.cli import run as evaluate

from conftest import OFFLINE_RUN, outputs, one_line


class FullDisk:
    """A file on a full disk: every write fails with ENOSPC."""

    def __init__(self, file):
        self.file = file

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("script, args, written", [
    ("evaluate", [], f"runs/{OFFLINE_RUN}.json"),
    ("evaluate", ["--save-baseline", "baselines/new.json", "--label", "kept"], "baselines/new.json"),
    ("calibrate", [], "runs/calibration+lexical.json"),
    ("compare", [f"runs/{OFFLINE_RUN}.json", f"runs/{OFFLINE_RUN}.json", "--html", "runs/diff.html"], "runs/diff.html")])
def test_a_full_disk_exits_2_naming_the_file_and_leaves_nothing_half_written(here, monkeypatch, capsys, script, args,
                                                                             written):
    (here / written).unlink(missing_ok=True)  # a report identical to the one on disk is not written again
    if script == "evaluate":
        monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # the hash run alone: a baseline is of one run
    if "--label" in args:  # the run is kept under its label already, so the baseline is the one file to write
        assert evaluate.main(["--label", "kept"]) == 0
        capsys.readouterr()
    before = outputs(here)
    real_fdopen = os.fdopen
    monkeypatch.setattr(cassette_files.os, "fdopen", lambda fd, *a, **kw: FullDisk(real_fdopen(fd, *a, **kw)))
    assert importlib.import_module({"evaluate": "whichstage.cli.run", "calibrate": "whichstage.analysis.calibration", "compare": "whichstage.analysis.compare"}[script]).main(args) == 2
    out, err = capsys.readouterr()
    assert one_line(err) == f"{script}.py: {written}: cannot write: No space left on device"
    assert out == "" and outputs(here) == before

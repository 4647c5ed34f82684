"""The paths evals.toml names: one that leaves the project folder (absolute, `..`, a link to a page, a records
file or the factory outside it) is refused naming its key or file, and one that is not there naming its key.
Through the commands, on a project made by `init` (conftest.notes)."""
import os
import shutil

import pytest

from conftest import edit_file as edit, one_line_refusal as refused
from whichstage.cli import run as evaluate


# ---- paths that leave the project folder -----------------------------------------------------------------

OUTSIDE = [
    ('pages = "pages/*.md"', 'pages = "/etc/*.md"', "pages: '/etc/*.md'"),
    ('pages = "pages/*.md"', 'pages = ["pages/*.md", "../*.md"]', "pages[1]: '../*.md'"),
    ('cases = "cases.json"', 'cases = "pages/../../cases.json"', "cases: 'pages/../../cases.json'"),
    ('records = "orders.json"', 'records = "/tmp/orders.json"', "tools.get_order.records: '/tmp/orders.json'"),
    ('cases = "cases.json"', 'cases = "cases.json"\nsources = ["agent.py", "/etc/hostname"]',
     "sources[1]: '/etc/hostname'"),
]


@pytest.mark.parametrize("old, new, said", OUTSIDE, ids=[c[2].split(":")[0] for c in OUTSIDE])
def test_a_path_outside_the_project_is_refused_naming_the_key(notes, capsys, old, new, said):
    edit(notes / "evals.toml", old, new)
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err == f"evaluate.py: evals.toml: {said} is outside the project folder: name a path inside it, " \
                  "relative to it\n"


def test_a_page_that_links_outside_the_project_is_refused_naming_it(notes, tmp_path, capsys):
    (tmp_path / "secret.md").write_text("# Secret\n\nNot part of the project.\n")
    os.symlink(tmp_path / "secret.md", notes / "pages" / "secret.md")
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err == f"evaluate.py: pages/secret.md: a link to {(tmp_path / 'secret.md').resolve()}, outside the " \
                  "project folder: only files inside it are read\n"


def test_a_records_file_that_links_outside_the_project_is_refused_naming_it(notes, tmp_path, capsys):
    shutil.move(notes / "orders.json", tmp_path / "orders.json")
    os.symlink(tmp_path / "orders.json", notes / "orders.json")
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err.startswith("evaluate.py: orders.json: a link to ") and "outside the project folder" in err


def test_a_factory_module_that_links_outside_the_project_is_refused_naming_it(notes, tmp_path, capsys):
    shutil.move(notes / "agent.py", tmp_path / "agent.py")
    os.symlink(tmp_path / "agent.py", notes / "agent.py")
    err = refused(capsys, evaluate.main(["--project", ".", "--live"]))
    assert err.startswith("evaluate.py: agent.py: a link to ") and "outside the project folder" in err


# ---- a file evals.toml names that is not there ----------------------------------------------------------------

MISSING = [
    ('records = "orders.json"', 'records = "order.json"', "tools.get_order.records: 'order.json'"),
    ('cases = "cases.json"', 'cases = "case.json"', "cases: 'case.json'"),
    ('pages = "pages/*.md"', 'pages = "pages.json"', "pages: 'pages.json'"),
]


@pytest.mark.parametrize("old, new, said", MISSING, ids=[c[2].split(":")[0] for c in MISSING])
def test_a_mistyped_path_is_refused_naming_its_key(notes, capsys, old, new, said):
    edit(notes / "evals.toml", old, new)
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err == f"evaluate.py: evals.toml: {said}: file not found in {notes}\n"


def test_a_mistyped_calibration_path_is_refused_naming_its_key(notes, capsys):
    from whichstage.analysis import calibration as calibrate

    edit(notes / "evals.toml", 'cases = "cases.json"', 'cases = "cases.json"\ncalibration = "labels.json"')
    err = refused(capsys, calibrate.main(["--project", "."]))
    assert err == f"calibrate.py: evals.toml: calibration: 'labels.json': file not found in {notes}\n"

"""Inputs at their edges, through the commands as a user runs them: an integer too long for Python to read in
any input file, paths that leave the project folder, and a `**` glob of pages beside the harness's own files."""
import json
import os
import shutil
from pathlib import Path

import pytest

from whichstage import recording as cassette
from whichstage.analysis import compare
from whichstage.cli import run as evaluate
from conftest import OFFLINE, load_project

RUN = "acme-notes+rules+hash+lexical"
LONG = "9" * 5000  # more digits than Python converts to an int (sys.get_int_max_str_digits, 4300)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A project made by `evaluate.py init`, recorded once with the offline backends and a baseline saved."""
    folder = tmp_path_factory.mktemp("made") / "notes"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder.parent)
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert evaluate.main(["init", str(folder)]) == 0
        assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) == 0
        assert evaluate.main(["--project", str(folder), "--save-baseline", str(folder / "baselines" / "b.json")]) == 0
    return folder


@pytest.fixture
def notes(recorded, tmp_path, monkeypatch, capsys) -> Path:
    """A copy of the recorded project, run from its own folder with the offline backends."""
    folder = tmp_path / "notes"
    shutil.copytree(recorded, folder)
    monkeypatch.chdir(folder)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def refused(capsys, code: int) -> str:
    """The one line a refused command printed on stderr (exit 2, nothing on stdout)."""
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err[-2000:])
    return err


# ---- an integer longer than Python reads: one line, exit 2, wherever it is -----------------------------------

LONG_IN_PROJECT = [
    ("evals.toml", "k = 2", f"k = {LONG}", "evaluate.py: evals.toml: line 5 column 5: an integer of 5000 digits"),
    ("cases.json", '"version": 1', f'"version": {LONG}', "evaluate.py: cases.json: line 3 column 14: an integer of 5000 digits"),
    ("orders.json", '"plan": "Pro"', f'"plan": -{LONG}', "evaluate.py: orders.json: line 3 column 13: an integer of 5000 digits"),
    ("pages/sync.md", "# Syncing", f"---\nrevision: {LONG}\n---\n# Syncing",
     "evaluate.py: pages/sync.md: front matter: line 2 column 11: an integer of 5000 digits"),
]


@pytest.mark.parametrize("name, old, new, message", LONG_IN_PROJECT, ids=[c[0] for c in LONG_IN_PROJECT])
def test_a_long_integer_in_an_input_is_one_line_naming_the_file(notes, capsys, name, old, new, message):
    edit(notes / name, old, new)
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err.startswith(message) and "(at most 4300 are read)" in err


def test_an_impossible_date_in_front_matter_is_one_line_naming_the_page(notes, capsys):
    edit(notes / "pages" / "sync.md", "# Syncing", "---\nrevised: 2024-13-01\n---\n# Syncing")
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err == "evaluate.py: pages/sync.md: front matter: not valid YAML: month must be in 1..12\n"


def test_a_long_integer_in_a_recording_is_one_line_naming_it(notes, capsys):
    path = notes / "recordings" / f"{RUN}.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data, indent=1).replace('"output_tokens": ', f'"output_tokens": {LONG}, "was": ', 1))
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err.startswith(f"evaluate.py: recordings/{RUN}.json: line ") and "an integer of 5000 digits" in err


def test_a_long_integer_in_a_baseline_is_one_line_naming_it(notes, capsys):
    edit(notes / "baselines" / "b.json", '"tolerance": 0.1', f'"tolerance": {LONG}')
    err = refused(capsys, evaluate.main(["--project", ".", "--check-baseline", "baselines/b.json"]))
    assert err.startswith("evaluate.py: baselines/b.json: line ") and "an integer of 5000 digits" in err


@pytest.mark.parametrize("which", [0, 1])
def test_a_long_integer_in_either_run_compare_reads_is_one_line_naming_it(notes, capsys, which):
    runs = [notes / "runs" / f"{RUN}.json", notes / "runs" / "other.json"]
    shutil.copy(runs[0], runs[1])
    edit(runs[which], '"threshold": ', f'"threshold": {LONG}, "was": ')
    err = refused(capsys, compare.main([str(r.relative_to(notes)) for r in runs]))
    assert err.startswith(f"compare.py: {runs[which].relative_to(notes)}: line ") and "5000 digits" in err


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

# ---- a `**` glob of pages ---------------------------------------------------------------------------------

def test_a_project_of_all_its_markdown_replays_clean_after_a_live_run(tmp_path, monkeypatch, capsys):
    """`pages = "**/*.md"` never reads the reports a run writes (runs/*.md), so the replay is current."""
    monkeypatch.chdir(tmp_path)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["init", "mine"]) == 0
    edit(tmp_path / "mine" / "evals.toml", 'pages = "pages/*.md"', 'pages = "**/*.md"')
    assert evaluate.main(["--project", "mine", "--live", "--quiet"]) == 0
    assert (tmp_path / "mine" / "runs" / f"{RUN}.md").is_file()
    capsys.readouterr()
    assert evaluate.main(["--project", "mine"]) == 0, capsys.readouterr().err


def test_a_glob_skips_environments_and_package_folders(notes):
    from whichstage.project import paths as project_files

    for folder in ("venv/lib", "env2", "node_modules/x", "docs/__pycache__"):
        (notes / folder).mkdir(parents=True)
        (notes / folder / "README.md").write_text("# Not a page\n\nInstalled, not written.\n")
    (notes / "env2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (notes / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (notes / "docs" / "guide.md").write_text("# Guide\n\nA page of the project.\n")
    assert [p.relative_to(notes).as_posix() for p in project_files.files_matching(notes, "**/*.md")] == \
        ["docs/guide.md", "pages/export.md", "pages/plans.md", "pages/sync.md"]


def test_a_glob_may_name_a_package_folder_it_means(notes):
    from whichstage.project import paths as project_files

    (notes / "node_modules" / "x").mkdir(parents=True)
    (notes / "node_modules" / "x" / "README.md").write_text("# Named\n\nNamed by the pattern.\n")
    assert [p.relative_to(notes).as_posix() for p in project_files.files_matching(notes, "node_modules/*/*.md")] == \
        ["node_modules/x/README.md"]


def test_pages_may_be_a_list_of_globs(notes):
    (notes / "faq").mkdir()
    (notes / "faq" / "billing.md").write_text("# Billing\n\nInvoices are sent monthly.\n")
    edit(notes / "evals.toml", 'pages = "pages/*.md"', 'pages = ["pages/*.md", "faq/*.md", "pages/sync.md"]')
    assert [p["id"] for p in load_project(notes).pages] == \
        ["faq/billing.md", "pages/export.md", "pages/plans.md", "pages/sync.md"]


def test_a_glob_of_the_harness_outputs_alone_is_refused_saying_why(notes, capsys):
    edit(notes / "evals.toml", 'pages = "pages/*.md"', 'pages = ["pages/*.md", "runs/*.md"]')
    err = refused(capsys, evaluate.main(["--project", "."]))
    assert err.startswith("evaluate.py: evals.toml: pages[1]: 'runs/*.md' matches no file in ") \
        and err.endswith("(runs, recordings, baselines, .cache are never read)\n")


def test_a_long_integer_in_a_journal_line_makes_that_line_damaged_not_a_traceback(tmp_path):
    journal = tmp_path / ".run.partial.jsonl"
    whole = json.dumps({"entry": "agent/a", "deps": {}, "value": 1})
    journal.write_text('{"models": {}}\n' + whole + "\n" + whole.replace(": 1}", f": {LONG}}}") + "\n")
    read = cassette.read_journal(journal)
    assert list(read["entries"]) == ["agent/a"] and len(read["damaged"]) == 1 and LONG in read["damaged"][0]


@pytest.mark.parametrize("shard", [f"1/{LONG}", f"{LONG}/2"])
def test_a_shard_of_a_long_integer_is_one_line(notes, capsys, shard):
    err = refused(capsys, evaluate.main(["--project", ".", "--live", "--shard", shard]))
    assert err.startswith(f"evaluate.py: --shard '{shard[:40]}...': expected I/N")

"""Globs of pages: `**/*.md` never reads the harness's own outputs nor environments and package folders (unless
the pattern names one), `pages` may be a list of globs, and a glob of the outputs alone is refused saying why.
On a project made by `init` (conftest.notes)."""

from conftest import edit_file as edit, one_line_refusal as refused
from whichstage.cli import run as evaluate
from conftest import OFFLINE, load_project


RUN = "acme-notes+rules+hash+lexical"


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

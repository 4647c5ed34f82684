"""--case naming a held-out case reports it (by id or by a glob of held-out cases only), a glob matching dev
cases too keeps the held-out ones hidden, and a split holding none of the named cases is refused in one line."""
from pathlib import Path

import pytest


@pytest.fixture
def hash_run(here, monkeypatch) -> Path:
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # one of the two bundled runs
    return here


def test_case_naming_a_held_out_case_reports_it(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "bug-240-week-start"]) == 0
    out = capsys.readouterr().out
    assert "\n| bug-240-week-start | " in out and "0/1 cases pass every stage" in out


def test_a_glob_matching_only_held_out_cases_reports_them(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "android-*"]) == 0
    assert "\n| android-app | " in capsys.readouterr().out


def test_a_glob_matching_dev_cases_too_keeps_the_held_out_ones_hidden(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "*-*"]) == 0
    out = capsys.readouterr().out
    assert "\n| issue-212 | " in out and "| android-app |" not in out and "split dev." in out


def test_case_with_a_split_that_holds_none_of_the_named_cases_is_refused_in_one_line(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "bug-240-week-start", "--split", "dev"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "bug-240-week-start (holdout)" in err and "dev split" in err

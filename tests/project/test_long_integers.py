"""An integer longer than Python reads (5000 digits), wherever a user can write one (evals.toml, cases, records,
a page's front matter, a recording, a baseline, a report compare reads, a journal line, --shard), and an
impossible date in front matter: one line naming the file, exit 2, never a traceback. Through the commands, on
a project made by `init` (conftest.notes)."""
import json
import shutil

import pytest

from conftest import edit_file as edit, one_line_refusal as refused
from whichstage.recording.journal import read_journal
from whichstage.analysis import compare
from whichstage.cli import run as evaluate


RUN = "acme-notes+rules+hash+lexical"
LONG = "9" * 5000  # more digits than Python converts to an int (sys.get_int_max_str_digits, 4300)


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


def test_a_long_integer_in_a_journal_line_makes_that_line_damaged_not_a_traceback(tmp_path):
    journal = tmp_path / ".run.partial.jsonl"
    whole = json.dumps({"entry": "agent/a", "deps": {}, "value": 1})
    journal.write_text('{"models": {}}\n' + whole + "\n" + whole.replace(": 1}", f": {LONG}}}") + "\n")
    read = read_journal(journal)
    assert list(read["entries"]) == ["agent/a"] and len(read["damaged"]) == 1 and LONG in read["damaged"][0]


@pytest.mark.parametrize("shard", [f"1/{LONG}", f"{LONG}/2"])
def test_a_shard_of_a_long_integer_is_one_line(notes, capsys, shard):
    err = refused(capsys, evaluate.main(["--project", ".", "--live", "--shard", shard]))
    assert err.startswith(f"evaluate.py: --shard '{shard[:40]}...': expected I/N")

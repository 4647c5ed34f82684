"""Which pages changed, as a stale replay and the plan name them (a few, then counted), and the pages' index a
first recording says it wrote beside its entries."""
import json

from whichstage.cli import run as evaluate


def edit_first_page(folder) -> str:
    path = folder / "docs.json"
    pages = json.loads(path.read_text())
    pages[0]["text"] += " Edited."
    path.write_text(json.dumps(pages, indent=2))
    return pages[0]["id"]


def test_a_stale_replay_names_the_page_that_changed(here, capsys):
    page = edit_first_page(here)
    assert evaluate.main(["--model", "rules"]) == 2
    assert f"(pages changed ({page} edited))" in capsys.readouterr().err


def test_the_plan_names_the_page_that_changed(live_project, capsys):
    page = edit_first_page(live_project)
    assert evaluate.main(["--live", "--plan"]) == 0
    out = capsys.readouterr().out
    assert "  agent runs: " in out and f"(pages changed ({page} edited): " in out


def test_changed_parts_are_named_a_few_then_counted():
    from whichstage.recording.store import parts_changed

    old = {"a": "1", "b": "2", "c": "3", "d": "4"}
    new = {"a": "1", "b": "9", "c": "8", "e": "5", "f": "6"}
    assert parts_changed(old, new) == "b edited, c edited, e added, and 2 more"  # f added, d removed
    assert parts_changed(old, dict(reversed(old.items()))) == "the same ones, in another order"


def test_a_first_recording_says_it_wrote_the_pages_index_beside_its_entries(tmp_path, monkeypatch, capsys):
    from conftest import OFFLINE
    from whichstage.cli import run as evaluate, init
    from whichstage.recording.format import read_recording

    assert init.main([str(tmp_path / "p")]) == 0
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    assert evaluate.main(["--project", str(tmp_path / "p"), "--live", "--quiet"]) == 0
    said = capsys.readouterr().err.strip().splitlines()[-1]
    [recording] = (tmp_path / "p" / "recordings").glob("*.json")
    entries = read_recording(recording)["entries"]
    assert "index/pages" in entries
    assert said.startswith(f"recorded {len(entries) - 1} new entries and the pages' index, kept 0: wrote ")

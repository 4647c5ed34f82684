"""Inputs saved with a UTF-8 byte-order mark load, replay to the same reports, and serve the assistant.
Offline, on a copy of the project."""
from conftest import outputs
import codecs
import json

import pytest

import assistant
from whichstage.cli import run as evaluate


def latest(files: dict) -> dict:
    """The outputs but the copies every written run keeps in runs/history."""
    return {path: data for path, data in files.items() if path.parts[:2] != ("runs", "history")}


@pytest.mark.parametrize("name", ["cases.json", "docs.json"])
def test_an_input_with_a_byte_order_mark_loads_and_replays(here, capsys, name):
    (here / name).write_bytes(codecs.BOM_UTF8 + (here / name).read_bytes())
    before = outputs(here)
    assert evaluate.main([]) == 0
    assert latest(outputs(here)) == latest(before)  # the same inputs, the same reports


def test_assistant_reads_docs_with_a_byte_order_mark(project, monkeypatch, capsys):
    (project / "docs.json").write_bytes(codecs.BOM_UTF8 + (project / "docs.json").read_bytes())
    monkeypatch.setenv("DOCS_MODEL", "rules")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")
    assert assistant.main(["--project", str(project), "Where does tracker keep its data, and what should I back up?"]) == 0
    assert "storage" in json.loads(capsys.readouterr().out)["searches"][0]

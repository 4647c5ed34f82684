"""--help of the assistant, calibrate.py and evaluate.py: usage, the model variables and every exit code, read
whole at 80 columns, and nothing asked of a model."""
import re

import pytest

import assistant
from whichstage.analysis import calibration as calibrate
from whichstage.cli import run as evaluate


def help_text(module, monkeypatch, capsys) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_assistant_help_prints_usage_and_asks_nothing(monkeypatch, capsys):
    def no_run(*args):
        raise AssertionError("--help ran the agent")
    monkeypatch.setattr(assistant, "build_agent", no_run)
    monkeypatch.setenv("DOCS_MODEL", "rules")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")
    out = help_text(assistant, monkeypatch, capsys)
    assert out.startswith("usage: ") and "question" in out and "DOCS_MODEL" in out and "DOCS_EMBEDDER" in out


def test_calibrate_help_reads_whole(monkeypatch, capsys):
    out = " ".join(help_text(calibrate, monkeypatch, capsys).split())
    assert " ".join(calibrate.__doc__.split("\n\n")[0].split()) in out  # the first paragraph, to its end
    assert "DOCS_JUDGE" in out and "3 incomplete, 130 interrupted, 143 terminated (SIGTERM)" in out
    assert out.endswith("keeps every score it paid for.")


def test_evaluate_help_names_the_model_variables_and_every_exit_code(monkeypatch, capsys):
    out = help_text(evaluate, monkeypatch, capsys)
    for variable in ("DOCS_MODEL", "DOCS_EMBEDDER", "DOCS_JUDGE"):
        assert re.search(rf"^  {variable} .*\(default [\w.:-]+\)$", out, re.M), variable
    for code, meaning in [(0, "done"), (1, "regressed against --check-baseline"), (2, "bad input"),
                          (3, "incomplete"), (130, "interrupted"), (143, "terminated")]:
        assert re.search(rf"^  {code} +{re.escape(meaning)}", out, re.M), code
    assert max(len(line) for line in out.splitlines()) <= 80

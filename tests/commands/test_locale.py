"""A replay under a locale that is not UTF-8 (plain C, ISO-8859-1): non-ASCII inputs replay, the reports
are written in UTF-8 under an ASCII file name, and what the terminal cannot show is a '?'. Offline, on a copy
of the project."""
from conftest import edit_json as edit
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from whichstage.cli import run as evaluate


def non_utf8_env(kind: str, folder: Path) -> tuple[dict, str]:
    """A child's environment under plain C (ASCII) or ISO-8859-1, with its stdout encoding; skips if the
    locale cannot be had here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8"))}
    env.update(PYTHONUTF8="0", LC_ALL="C")
    if kind == "ISO-8859-1":
        try:
            subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(folder / "en_US.ISO-8859-1")],
                           capture_output=True, timeout=60)
        except FileNotFoundError:
            pytest.skip("no localedef to build an ISO-8859-1 locale")
        if not (folder / "en_US.ISO-8859-1").is_dir():
            pytest.skip("localedef could not build an ISO-8859-1 locale")
        env.update(LOCPATH=str(folder), LC_ALL="en_US.ISO-8859-1")
    probe = subprocess.run([sys.executable, "-c", "import locale, sys; print(locale.getpreferredencoding(), "
                            "sys.stdout.encoding)"], env=env, capture_output=True, text=True, timeout=60)
    preferred, stdout = probe.stdout.split()
    if "utf" in preferred.lower() or "utf" in stdout.lower():
        pytest.skip(f"the {kind} locale still reads as {preferred} here")
    return env, stdout


@pytest.mark.parametrize("kind", ["C", "ISO-8859-1"])
def test_a_replay_with_non_ascii_text_runs_under_a_non_utf8_locale(sample_project, tmp_path_factory, kind):
    project = sample_project
    edit(project / "docs.json", lambda docs: docs[0].update(text=docs[0]["text"] + " Café — naïve."))
    edit(project / "cases.json", lambda cases: cases.update(name="docs-assistant — café"))  # printed last
    edit(project / "cases.json", lambda cases: next(c for c in cases["cases"] if c["id"] == "issue-212").update(
        reference="Issue 212 — import drops café rows — is fixed in 2.4.1."))
    assert evaluate.main(["--live", "--quiet"]) == 0  # records what the edits made stale
    for report in (project / "runs").glob("*.*"):
        report.unlink()  # so the replay writes every latest report under the locale (runs/history keeps its own)
    env, encoding = non_utf8_env(kind, tmp_path_factory.mktemp("locale"))
    done = subprocess.run([sys.executable, "evaluate.py"], cwd=project, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode(errors="replace")
    from whichstage.run.files import run_name

    name = run_name("docs-assistant — café", "rules", "hash", "lexical")  # an ASCII file name for any name
    assert name.isascii() and name.startswith("docs-assistant-caf-~")
    page = (project / "runs" / f"{name}.md").read_text(encoding="utf-8")
    version = json.loads((project / "cases.json").read_text(encoding="utf-8"))["version"]
    assert f"cases docs-assistant — café@{version}, split dev.\n" in page
    assert "café rows —" in (project / "runs" / f"{name}.html").read_text(encoding="utf-8")
    assert done.stdout == page.encode(encoding, errors="replace")  # what the terminal cannot show is a '?'

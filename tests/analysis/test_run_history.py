"""Run history: every written run kept under its label in runs/history/<name>/ beside the latest report, and
compare taking runs by label, and comparing runs measured differently when asked (--across)."""
import json
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from whichstage.analysis import compare
from whichstage.cli import run as evaluate
from whichstage.render import files as report_writing
from conftest import E5_RUN, OFFLINE_RUN, one_line

HERE = Path(__file__).parents[2]
KEPT = Path("runs") / "history"
NOON = datetime(2026, 12, 1, 18, 30, 0, tzinfo=timezone.utc)


def kept(project: Path, label: str, run: str = OFFLINE_RUN) -> Path:
    """The JSON report kept under `label` for `run`."""
    return project / KEPT / run / f"{label}.json"


def files(project: Path) -> dict:
    """Every file under runs/, recordings/ and baselines/, with its bytes."""
    return {p: p.read_bytes() for folder in ("runs", "recordings", "baselines")
            for p in sorted((project / folder).rglob("*")) if p.is_file()}


def raise_threshold(project: Path) -> None:
    """A deliberate change that moves the report and leaves the recording current: the project's threshold."""
    toml = project / "evals.toml"
    toml.write_text("threshold = 0.5\n" + toml.read_text())


@pytest.fixture
def hash_run(here, monkeypatch) -> Path:
    """The bundled project's copy, replaying its hash embedder's run alone."""
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")
    return here


@pytest.fixture
def clock(monkeypatch) -> datetime:
    """The clock stopped at one second, so every run without a label is written in the same second."""
    monkeypatch.setattr(report_writing, "utc_now", lambda: NOON)
    return NOON


def run(capsys, *args: str) -> int:
    code = evaluate.main(list(args))
    capsys.readouterr()
    return code


def compared(capsys, *args: str) -> tuple[int, str, str]:
    code = compare.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---- keeping runs --------------------------------------------------------------------------------------------

def test_a_labelled_run_is_kept_beside_the_latest_as_json_markdown_and_html(hash_run, capsys):
    assert run(capsys, "--label", "v1") == 0
    latest = hash_run / "runs" / OFFLINE_RUN
    for suffix in (".json", ".md", ".html"):
        assert kept(hash_run, "v1").with_suffix(suffix).read_bytes() == latest.with_suffix(suffix).read_bytes()


def test_a_second_label_keeps_the_first_run_as_it_was(hash_run, capsys):
    assert run(capsys, "--label", "v1") == 0
    first = kept(hash_run, "v1").read_bytes()
    raise_threshold(hash_run)
    assert run(capsys, "--label", "v2") == 0
    assert kept(hash_run, "v1").read_bytes() == first
    assert json.loads(kept(hash_run, "v2").read_text())["threshold"] == 0.5
    assert json.loads(first)["threshold"] == 0.7


def test_a_label_that_holds_another_run_is_refused_and_nothing_is_written(hash_run, capsys):
    assert run(capsys, "--label", "v1") == 0
    raise_threshold(hash_run)
    before = files(hash_run)
    assert evaluate.main(["--label", "v1"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err) == (f"evaluate.py: --label v1: runs/history/{OFFLINE_RUN}/v1.json already holds another "
                             "run; choose another label, or delete that run's files to reuse it")
    assert out == "" and files(hash_run) == before  # not even the latest report


def test_the_same_run_under_its_label_again_is_allowed_and_writes_nothing(hash_run, capsys):
    assert run(capsys, "--label", "v1") == 0
    written = {p: p.stat().st_mtime_ns for p in files(hash_run)}
    assert run(capsys, "--label", "v1") == 0
    assert {p: p.stat().st_mtime_ns for p in files(hash_run)} == written


def test_without_a_label_the_run_is_kept_under_the_utc_time(hash_run, capsys, clock):
    assert run(capsys) == 0
    assert [p.name for p in sorted((hash_run / KEPT / OFFLINE_RUN).iterdir())] == \
        ["20261201T183000Z.html", "20261201T183000Z.json", "20261201T183000Z.md"]


def test_two_runs_in_the_same_second_are_both_kept(hash_run, capsys, clock):
    assert run(capsys) == 0
    first = kept(hash_run, "20261201T183000Z").read_bytes()
    raise_threshold(hash_run)
    assert run(capsys) == 0
    assert kept(hash_run, "20261201T183000Z").read_bytes() == first
    assert json.loads(kept(hash_run, "20261201T183000Z-2").read_text())["threshold"] == 0.5


def test_every_run_of_one_replay_is_kept_under_the_same_label(here, capsys):
    assert run(capsys, "--label", "both") == 0  # no DOCS_EMBEDDER: the hash and the e5-small runs
    assert kept(here, "both").is_file() and kept(here, "both", E5_RUN).is_file()


@pytest.mark.parametrize("label", ["a b", "../up", ".hidden", "a/b", "", "x" * 101, "é"])
def test_a_bad_label_exits_2_naming_the_option_and_writes_nothing(hash_run, capsys, label):
    before = files(hash_run)
    assert evaluate.main(["--label", label]) == 2
    out, err = capsys.readouterr()
    assert one_line(err).startswith(f"evaluate.py: --label {label!r}: a label is letters, digits, '.', '_' and '-'")
    assert out == "" and files(hash_run) == before and not (hash_run / KEPT).exists()


@pytest.mark.parametrize("other", [["--case", "backup"], ["--show", "backup"], ["--live", "--plan"]])
def test_a_label_with_an_option_that_writes_no_report_is_refused(hash_run, capsys, other):
    with pytest.raises(SystemExit) as stopped:
        evaluate.main(["--label", "v1", *other])
    assert stopped.value.code == 2
    assert "--label names a written run" in capsys.readouterr().err and not (hash_run / KEPT).exists()


def test_the_repository_ignores_every_project_s_run_history():
    if shutil.which("git") is None or not (HERE / ".git").exists():
        pytest.skip("not a git checkout")
    for path in (f"runs/history/{OFFLINE_RUN}/v1.json", "examples/inverter/runs/history/x/v1.json"):
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=HERE, timeout=60).returncode == 0, path
    assert subprocess.run(["git", "check-ignore", "-q", f"runs/{OFFLINE_RUN}.json"], cwd=HERE,
                          timeout=60).returncode == 1  # the latest stays committed


# ---- compare by label --------------------------------------------------------------------------------------

def test_compare_takes_two_runs_by_label(hash_run, capsys):
    assert run(capsys, "--label", "v1") == 0 and run(capsys, "--label", "v2") == 0
    code, out, err = compared(capsys, "v1", "v2")
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert lines[0].startswith(f"A: runs/history/{OFFLINE_RUN}/v1.json  model rules  pass ")
    assert lines[1].startswith(f"B: runs/history/{OFFLINE_RUN}/v2.json  model rules  pass ")
    assert "fixed by B (0):" in lines and "broken by B (0):" in lines


def test_compare_looks_labels_up_in_the_project_it_is_given(hash_run, capsys, monkeypatch, tmp_path_factory):
    assert run(capsys, "--label", "v1") == 0
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    code, out, _ = compared(capsys, "v1", "v1", "--project", str(hash_run))
    assert code == 0 and out.startswith(f"A: {kept(hash_run, 'v1')}  model rules")


def test_a_label_that_names_several_runs_is_refused_listing_them(here, capsys):
    assert run(capsys, "--label", "v1") == 0  # the hash and the e5-small runs
    code, out, err = compared(capsys, "v1", "v1")
    assert code == 2 and out == ""
    assert one_line(err) == (f"compare.py: label v1 names 2 runs in runs/history: {E5_RUN}/v1, {OFFLINE_RUN}/v1; "
                             "name one as RUN/LABEL")


def test_a_run_and_its_label_name_one_of_several(here, capsys):
    assert run(capsys, "--label", "v1") == 0
    code, out, _ = compared(capsys, f"{OFFLINE_RUN}/v1", f"{OFFLINE_RUN}/v1")
    assert code == 0 and out.startswith(f"A: runs/history/{OFFLINE_RUN}/v1.json  model rules")


def test_an_unknown_label_is_refused_listing_the_labels_kept(hash_run, capsys):
    assert run(capsys, "--label", "v1") == 0 and run(capsys, "--label", "v2") == 0
    code, out, err = compared(capsys, "v1", "v3")
    assert code == 2 and out == ""
    assert one_line(err) == "compare.py: v3: not a report file, nor a label kept in runs/history (labels there: v1, v2)"


# ---- runs measured differently: --across -------------------------------------------------------------------

@pytest.fixture
def two_embedders(here, capsys, monkeypatch) -> Path:
    """The bundled project's two runs, one of each embedder, kept as `hash` and `e5`."""
    for embedder, label in (("hash", "hash"), ("e5-small", "e5")):
        monkeypatch.setenv("DOCS_EMBEDDER", embedder)
        assert run(capsys, "--label", label) == 0
    return here


def test_runs_of_two_embedders_are_refused_naming_the_option(two_embedders, capsys):
    code, out, err = compared(capsys, "hash", "e5")
    assert code == 2 and out == ""
    assert one_line(err) == ("compare.py: runs differ in embedder (A: hash, B: e5-small); compare runs measured the "
                             "same way, or pass --across to compare them anyway")


def test_across_compares_two_embedders_saying_first_what_differs(two_embedders, capsys):
    code, out, err = compared(capsys, "hash", "e5", "--across")
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert lines[:2] == ["compared across (--across); A and B differ in:", "  embedder: hash -> e5-small"]
    assert lines[2].startswith(f"A: runs/history/{OFFLINE_RUN}/hash.json")
    assert lines[3].startswith(f"B: runs/history/{E5_RUN}/e5.json") and lines[4].startswith("overall: ")


def test_across_writes_what_differs_at_the_top_of_the_html_page(two_embedders, capsys):
    code, _, _ = compared(capsys, "hash", "e5", "--across", "--html", "diff.html")
    page = (two_embedders / "diff.html").read_text()
    assert code == 0
    assert page.index('<div id="across">') < page.index("<ul><li>A: ")
    assert "<li>embedder: hash -&gt; e5-small</li>" in page


def test_across_pairs_the_cases_both_runs_hold_and_counts_the_others(hash_run, capsys):
    assert run(capsys, "--label", "dev") == 0 and run(capsys, "--split", "all", "--label", "all") == 0
    dev = {r["id"] for r in json.loads(kept(hash_run, "dev").read_text())["rows"]}
    every = {r["id"] for r in json.loads(kept(hash_run, "all", f"{OFFLINE_RUN}.all").read_text())["rows"]}
    code, out, _ = compared(capsys, f"{OFFLINE_RUN}/dev", f"{OFFLINE_RUN}.all/all", "--across")
    lines = out.splitlines()
    assert code == 0 and dev < every
    assert lines[1:3] == ["  split: dev -> all",
                          f"  cases: 0 only in A, {len(every - dev)} only in B; compared on the {len(dev)} both hold"]
    assert f" of {len(dev)} paired cases; " in next(line for line in lines if line.startswith("overall: "))
    assert not any(line.startswith("only in B") for line in lines)


def test_across_on_runs_measured_alike_adds_nothing(hash_run, capsys):
    assert run(capsys, "--label", "v1") == 0
    _, plain, _ = compared(capsys, "v1", "v1")
    _, across, _ = compared(capsys, "v1", "v1", "--across")
    assert across == plain

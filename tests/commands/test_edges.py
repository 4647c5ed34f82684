"""Hard edges, each found when tried as a new user would: a non-UTF-8 locale, files that cannot be written
or read, a byte-order mark, ids that break the report, --help, log lines that contradicted each other, and
the CI workflows. All offline, on a copy of the project."""
import codecs
import errno
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

import assistant
from whichstage.scoring.summary import summarize
from whichstage.analysis import calibration as calibrate
from whichstage import recording as cassette
from whichstage._util import files as cassette_files
from whichstage.recording import journal as cassette_journal, lock as cassette_lock
from whichstage.cli import run as evaluate

from conftest import OFFLINE_RUN, SAMPLE, interrupt_after_runs, of_cases, untimed
from whichstage.project.validate import ID_RULE, PAGE_ID_RULE
from whichstage.render.markdown import markdown

HERE = Path(__file__).parents[2]
OUTPUTS = ("recordings", "runs", "baselines")
JOURNAL = f"recordings/.{OFFLINE_RUN}.partial.jsonl"


def edit(path: Path, change) -> None:
    """Change a JSON file as a user's editor would save it: UTF-8, non-ASCII as written."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def outputs(project: Path) -> dict:
    """Every file the commands write (recordings, reports, baselines), hidden temp files included."""
    return {p.relative_to(project): p.read_bytes() for folder in OUTPUTS for p in sorted((project / folder).rglob("*"))
            if p.is_file()}


def latest(files: dict) -> dict:
    """The outputs but the copies every written run keeps in runs/history."""
    return {path: data for path, data in files.items() if path.parts[:2] != ("runs", "history")}


def one_line(err: str) -> str:
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


def entries_in(project: Path) -> int:
    return len(json.loads((project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"])


# ---- a locale that is not UTF-8 ---------------------------------------------------------------------------

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


# ---- files that cannot be written or read: exit 2, one line naming the file, nothing half-written -----------

def test_a_baseline_that_cannot_be_written_exits_2_naming_it(here, monkeypatch, capsys):
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # a baseline is of one run: the hash embedder's
    assert evaluate.main(["--label", "kept"]) == 0  # kept once: the same run under its label writes nothing
    capsys.readouterr()
    before = outputs(here)
    assert evaluate.main(["--save-baseline", "/proc/x", "--label", "kept"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err).startswith("evaluate.py: /proc/x: cannot write: ")
    assert out == "" and outputs(here) == before


def test_a_baseline_that_is_not_an_object_exits_2_naming_it(here, capsys):
    (here / "b.json").write_text("5\n")
    before = outputs(here)
    assert evaluate.main(["--check-baseline", "b.json"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err).startswith("evaluate.py: b.json: not a baseline (missing measured_with, tolerance,")
    assert out == "" and outputs(here) == before


@pytest.mark.parametrize("field, value", [("tolerance", "0.1"), ("pass_rate", 0.9), ("stages.tools.passed", "10"),
                                          ("stages.faithfulness.total", True), ("retrieval.backup", "1.0"),
                                          ("measured_with", ["rules"]), ("first_failures.backup", 3)])
def test_a_baseline_field_of_the_wrong_type_exits_2_naming_the_file_and_field(here, capsys, field, value):
    def change(data):
        *parents, leaf = field.split(".")
        for part in parents:
            data = data[part]
        data[leaf] = value
    (here / "b.json").write_bytes((here / "baselines" / f"{OFFLINE_RUN}.json").read_bytes())
    edit(here / "b.json", change)
    before = outputs(here)
    assert evaluate.main(["--check-baseline", "b.json"]) == 2
    out, err = capsys.readouterr()
    assert re.fullmatch(rf"evaluate\.py: b\.json: {re.escape(field)}: Input should be a valid \w+", one_line(err))
    assert out == "" and outputs(here) == before


def read_only(monkeypatch, folder: Path) -> None:
    """Make `folder` refuse new files as a read-only folder does for a user who is not root; chmod does not
    stop root, whom these tests may run as. Both ways files are made are refused: temp files and the journal."""
    real_mkstemp, real_open = tempfile.mkstemp, open

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() == folder.resolve():
            raise PermissionError(errno.EACCES, "Permission denied", str(Path(dir) / ".tmp"))
        return real_mkstemp(*args, dir=dir, **kwargs)

    def opener(file, mode="r", *args, **kwargs):
        if Path(file).resolve().parent == folder.resolve() and mode[0] in "wax":
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(cassette_files.tempfile, "mkstemp", mkstemp)
    for module in (cassette_lock, cassette_journal):  # the lock file, and the journal
        monkeypatch.setattr(module, "open", opener, raising=False)


@pytest.mark.parametrize("how", ["simulated", "chmod"])
def test_a_read_only_runs_folder_exits_2_naming_the_report(here, monkeypatch, capsys, how):
    for report in (here / "runs").iterdir():
        report.unlink()
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder; the simulated variant covers root")
        (here / "runs").chmod(0o555)
    else:
        read_only(monkeypatch, here / "runs")
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # one run, so the first report it cannot write is this one
    try:
        assert evaluate.main([]) == 2
    finally:
        (here / "runs").chmod(0o755)
    out, err = capsys.readouterr()
    assert one_line(err) == f"evaluate.py: runs/{OFFLINE_RUN}.json: cannot write: Permission denied"
    assert out == "" and list((here / "runs").iterdir()) == []


def test_a_read_only_recordings_folder_exits_2_naming_the_first_file_it_cannot_write(live_project, monkeypatch,
                                                                                       capsys):
    edit(live_project / "cases.json", lambda cases: cases["cases"][0].update(question="Where is my data kept?"))
    before = outputs(live_project)
    read_only(monkeypatch, live_project / "recordings")
    assert evaluate.main(["--live", "--quiet", "--concurrency", "1"]) == 2
    out, err = capsys.readouterr()
    # the live run's lock comes first, before any call is paid for
    assert one_line(err) == f"evaluate.py: recordings/.{OFFLINE_RUN}.lock: cannot write: Permission denied"
    assert out == "" and outputs(live_project) == before


def test_a_recording_that_cannot_replace_the_old_one_exits_2_naming_it(sample_project, monkeypatch, capsys):
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst).parent.name == "recordings":
            raise PermissionError(errno.EACCES, "Permission denied", str(src), None, str(dst))
        return real_replace(src, dst)
    monkeypatch.setattr(cassette_files.os, "replace", replace)
    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert one_line(err.splitlines()[-1]) == \
        f"evaluate.py: recordings/{OFFLINE_RUN}.json: cannot write: Permission denied"
    assert out == "" and [p.name for p in (sample_project / "recordings").glob(".*.tmp")] == []
    assert (sample_project / JOURNAL).is_file()  # what was paid for is kept for the next run


class FullDisk:
    """A file on a full disk: every write fails with ENOSPC."""

    def __init__(self, file):
        self.file = file

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("script, args, written", [
    ("evaluate", [], f"runs/{OFFLINE_RUN}.json"),
    ("evaluate", ["--save-baseline", "baselines/new.json", "--label", "kept"], "baselines/new.json"),
    ("calibrate", [], "runs/calibration+lexical.json"),
    ("compare", [f"runs/{OFFLINE_RUN}.json", f"runs/{OFFLINE_RUN}.json", "--html", "runs/diff.html"], "runs/diff.html")])
def test_a_full_disk_exits_2_naming_the_file_and_leaves_nothing_half_written(here, monkeypatch, capsys, script, args,
                                                                             written):
    (here / written).unlink(missing_ok=True)  # a report identical to the one on disk is not written again
    if script == "evaluate":
        monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # the hash run alone: a baseline is of one run
    if "--label" in args:  # the run is kept under its label already, so the baseline is the one file to write
        assert evaluate.main(["--label", "kept"]) == 0
        capsys.readouterr()
    before = outputs(here)
    real_fdopen = os.fdopen
    monkeypatch.setattr(cassette_files.os, "fdopen", lambda fd, *a, **kw: FullDisk(real_fdopen(fd, *a, **kw)))
    assert importlib.import_module({"evaluate": "whichstage.cli.run", "calibrate": "whichstage.analysis.calibration", "compare": "whichstage.analysis.compare"}[script]).main(args) == 2
    out, err = capsys.readouterr()
    assert one_line(err) == f"{script}.py: {written}: cannot write: No space left on device"
    assert out == "" and outputs(here) == before


@pytest.mark.parametrize("name, args", [("cases.json", []), (f"recordings/{OFFLINE_RUN}.json", []),
                                        ("b.json", ["--check-baseline", "b.json"])])
def test_json_nested_1000_deep_exits_2_naming_the_file(here, capsys, name, args):
    (here / name).write_text("[" * 1000 + "]" * 1000)
    before = outputs(here)
    assert evaluate.main(args) == 2
    out, err = capsys.readouterr()
    assert one_line(err) == f"evaluate.py: {name}: nested too deeply to read"
    assert out == "" and outputs(here) == before


# ---- a byte-order mark ------------------------------------------------------------------------------------

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


# ---- ids that would break the markdown table or the HTML --------------------------------------------------

@pytest.mark.parametrize("bad", ["bad|id", "bad\nid", "<b>bad</b>", "two words"])
def test_a_case_id_that_would_break_the_report_is_refused_in_one_line(here, capsys, bad):
    edit(here / "cases.json", lambda cases: cases["cases"][3].update(id=bad))
    assert evaluate.main([]) == 2
    shown = bad if bad.isprintable() else repr(bad)
    assert one_line(capsys.readouterr().err) == f"evaluate.py: cases.json: cases[3] ({shown}).id: {ID_RULE}"
    assert ID_RULE == "ids may hold only ASCII letters, digits, '-', '_' and '.'"


def test_a_page_id_that_would_break_the_report_is_refused_in_one_line(here, capsys):
    edit(here / "docs.json", lambda docs: docs[2].update(id="arch|ive"))
    assert evaluate.main([]) == 2
    assert one_line(capsys.readouterr().err) == f"evaluate.py: docs.json: pages[2] (arch|ive).id: {PAGE_ID_RULE}"
    assert PAGE_ID_RULE == "a page id may not hold '|', '`' or a line break, nor start or end with a space"


def test_a_calibration_id_that_would_break_the_table_is_refused_in_one_line(here, capsys):
    edit(here / "calibration-cases.json", lambda cases: cases["cases"][1].update(id="csv|color"))
    assert calibrate.main([]) == 2
    assert one_line(capsys.readouterr().err) == \
        f"calibrate.py: calibration-cases.json: cases[1] (csv|color).id: {ID_RULE}"


# ---- --help -----------------------------------------------------------------------------------------------

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


# ---- log lines that say one thing ----------------------------------------------------------------------

def test_a_live_run_with_nothing_missing_says_only_that(live_project, monkeypatch, capsys):
    edit(live_project / "cases.json", lambda cases: cases["cases"][0].update(question="Where is my data kept?"))
    with monkeypatch.context() as m:
        def killed_before_the_journal_was_removed(self, keep=None) -> bool:
            cassette.write_atomic(self.path, self.dumps())
            return True
        m.setattr(cassette.Cassette, "save", killed_before_the_journal_was_removed)
        assert evaluate.main(["--live", "--quiet"]) == 0
    assert (live_project / JOURNAL).is_file()  # every entry it holds is in the recording too
    capsys.readouterr()
    assert evaluate.main(["--live", "--quiet"]) == 0
    assert capsys.readouterr().err.splitlines() == \
        [f"recorded 0 new entries, kept {entries_in(live_project)}: nothing to write"]
    assert not (live_project / JOURNAL).exists()


def test_rerecord_after_an_interrupted_run_calls_every_entry_again_and_resumes_nothing(sample_project,
                                                                                       fake_models, capsys):
    interrupt_after_runs(fake_models, 3)
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == evaluate.EXIT_INTERRUPTED
    assert (sample_project / JOURNAL).is_file()
    capsys.readouterr()
    fake_models.reset()
    assert evaluate.main(["--live", "--rerecord", "--quiet", "--concurrency", "1"]) == 0
    err = capsys.readouterr().err
    traces = [n for n in json.loads((sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
              if n.startswith("agent/")]
    assert len(fake_models.runs()) == len(traces) and "resuming" not in err  # every case of every split, and counterfactuals
    assert err.splitlines()[0].startswith("--rerecord: calling the models for every entry again; the ")
    assert err.splitlines()[0].endswith(" entries an interrupted run kept are dropped")


def test_a_report_with_one_errored_case_says_case_and_is(capsys):
    report = json.loads((HERE / "runs" / f"{OFFLINE_RUN}.json").read_text())
    for n, verb in [(1, "case errored and is"), (2, "cases errored and are")]:
        for row in report["rows"][:n]:
            row["first_failure"] = "error"
        report["summary"] = summarize(report["rows"], report["k"])
        assert f" {n} {verb} not scored." in markdown(report)


def test_calibration_with_one_errored_case_says_case(live_project, fake_models, capsys):
    edit(live_project / "calibration-cases.json",
         lambda cases: cases["cases"][0].update(answer=cases["cases"][0]["answer"] + " Really."))
    answer = json.loads((live_project / "calibration-cases.json").read_text())["cases"][0]["answer"]
    fake_models.fail(lambda call: call.kind == "judge" and answer in call.text, ValueError("the judge refused"))
    assert calibrate.main(["--live", "--quiet"]) == evaluate.EXIT_INCOMPLETE
    assert capsys.readouterr().err.splitlines()[-1] == "calibrate.py: incomplete: 1 case errored; run --live again"


# ---- CI where users keep it ----------------------------------------------------------------------------

def workflow(name: str) -> tuple[dict, dict]:
    data = yaml.safe_load((HERE / ".github" / "workflows" / name).read_text())
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` key as true
    return data, triggers if isinstance(triggers, dict) else dict.fromkeys(triggers)


def steps(data: dict) -> list[dict]:
    return [step for job in data["jobs"].values() for step in job["steps"]]


def test_ci_runs_the_ci_script_on_every_push_and_pull_request():
    data, triggers = workflow("ci.yml")
    assert {"push", "pull_request"} <= set(triggers)
    assert not any((triggers[t] or {}).get(k) for t in ("push", "pull_request") for k in ("branches", "paths"))
    assert any(s.get("uses", "").startswith("actions/setup-python@") and str(s["with"]["python-version"]) == "3.11"
               for s in steps(data))
    assert [s["run"] for s in steps(data) if "run" in s] == ["bash .ci/run"]


def test_the_live_evals_are_opt_in_and_never_run_on_push():
    data, triggers = workflow("evals.yml")
    assert "push" not in triggers and "workflow_dispatch" in triggers
    assert triggers["workflow_dispatch"]["inputs"]["shards"]["default"] == "4"
    runs = " ".join(s.get("run", "") for s in steps(data))
    assert "evaluate.py --live --shard" in runs and "calibrate.py --live" in runs and "--check-baseline" in runs
    jobs = data["jobs"]
    assert "run-evals" in jobs["calibrate"]["if"]
    assert jobs["shard"]["needs"] == "calibrate" and jobs["merge"]["needs"] == "shard"  # every job waits for its judge
    for name in ("calibrate", "shard"):
        assert jobs[name]["env"]["GOOGLE_API_KEY"] == "${{ secrets.GOOGLE_API_KEY }}"
    assert "GOOGLE_API_KEY" not in jobs["merge"].get("env", {})  # merging and replaying call no model
    uploads = [s for s in jobs["merge"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads and "runs/*.html" in uploads[0]["with"]["path"]


def evaluate_calls(command: str, env: dict) -> list[list[str]]:
    """The arguments of each `python evaluate.py ...` a workflow step's shell command runs, as bash expands them
    (its variables, quotes and globs, against the files there now): `python` stands in as a function printing them."""
    done = subprocess.run(["bash", "-c", "python() { printf '%s\\0' \"$@\"; printf '\\n'; }\n" + command],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = [line.split("\0")[:-1] for line in done.stdout.splitlines()]
    assert calls and all(call[0] == "evaluate.py" for call in calls), calls
    return [call[1:] for call in calls]


def test_the_workflows_shard_and_merge_commands_give_one_runs_recording(sample_project):
    """The shard job's and the merge job's own commands, run here (evaluate.py in this process) with the offline
    backends on three shards of the sample's cases."""
    data, _ = workflow("evals.yml")
    shard_run = next(s["run"] for s in data["jobs"]["shard"]["steps"] if "--shard" in s.get("run", ""))
    merge_runs = [s["run"] for s in data["jobs"]["merge"]["steps"]
                  if s.get("run") and "evaluate.py" in s["run"] and "check-baseline" not in s["run"]]
    (sample_project / "recordings" / f"{OFFLINE_RUN}.json").unlink()  # every shard records its own cases
    env = {**os.environ, "SHARDS": "3"}
    for shard in ("1", "2", "3"):
        for argv in evaluate_calls(shard_run, {**env, "SHARD": shard}):
            assert evaluate.main(argv) == 0
    for command in merge_runs:
        for argv in evaluate_calls(command, env):
            assert evaluate.main(argv) == 0
    merged = json.loads((sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    bundled = json.loads((HERE / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    assert untimed(merged) == untimed(of_cases(bundled, SAMPLE))


WORKFLOWS = sorted((HERE / ".github" / "workflows").glob("*.y*ml"))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_commit_with_its_version_in_a_comment(path):
    uses = [line.strip() for line in path.read_text().splitlines() if re.match(r"\s*(- )?uses:", line)]
    assert uses
    for line in uses:
        assert re.fullmatch(r"(- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} +# v\d+\.\d+\.\d+", line), line


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_checkout_leaves_no_credentials_in_the_workspace(path):
    data, _ = workflow(path.name)
    checkouts = [s for s in steps(data) if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all((s.get("with") or {}).get("persist-credentials") is False for s in checkouts)


def test_the_judge_is_calibrated_before_the_live_evaluation_spends_anything():
    data, _ = workflow("evals.yml")
    jobs = data["jobs"]
    calibrate = [s.get("run", "") for s in jobs["calibrate"]["steps"]]
    assert any("calibrate.py --live" in r for r in calibrate) and not any("evaluate.py" in r for r in calibrate)
    # the shard jobs, which pay for the live evaluation, start only once the calibration job has passed
    assert jobs["shard"]["needs"] == "calibrate" and "if" not in jobs["shard"]
    assert all("if" not in step for step in jobs["calibrate"]["steps"])


def zizmor() -> str | None:
    import shutil
    beside = Path(sys.executable).with_name("zizmor")
    return str(beside) if beside.is_file() else shutil.which("zizmor")


def test_the_workflows_pass_the_security_audit_offline():
    if not zizmor():
        pytest.skip("zizmor is not installed (it is in requirements-lock.txt)")
    done = subprocess.run([zizmor(), "--offline", "--no-progress", "--format", "json", ".github/workflows"],
                          cwd=HERE, capture_output=True, text=True, timeout=120)
    assert (done.returncode, json.loads(done.stdout or "null")) == (0, []), done.stdout + done.stderr


def test_ci_runs_the_audit_from_the_lock_after_installing_it_and_before_the_tests():
    script = (HERE / ".ci" / "run").read_text().splitlines()
    install = next(i for i, line in enumerate(script) if "-r requirements-lock.txt" in line)
    audit = next(i for i, line in enumerate(script) if line.startswith(".venv/bin/zizmor --offline"))
    tests = next(i for i, line in enumerate(script) if "-m pytest" in line)
    assert install < audit < tests and script[audit].split()[-1] == ".github/workflows"
    assert re.search(r"^zizmor==1\.32\.\d+$", (HERE / "requirements-lock.txt").read_text(), re.M)

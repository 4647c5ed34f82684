"""compare.py: the per-case diff of two saved reports, and its refusals. Offline: the bundled report and a
run recorded with the offline backends in a copy of the project."""
import errno
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from whichstage.scoring.gating import first_failure
from whichstage.model.stages import STAGES
from whichstage.scoring.summary import summarize
from whichstage.analysis import compare, compare_diff
from whichstage.cli import run as evaluate
from whichstage._util import console

from whichstage._util import stats
from conftest import copy_project

HERE = Path(__file__).parents[2]
BUNDLED = HERE / "runs" / "docs-assistant+rules+hash+lexical.json"
BUNDLED_ALL = HERE / "runs" / "docs-assistant+rules+hash+lexical.all.json"
OFFLINE = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
# Everything the archive page says about restoring. Dropping only "Run tracker restore ID ..." is not enough
# for the lexical judge: the title "Archiving and restoring tasks" and "cannot be restored" still hold
# tracker, restore and ID, 3 of the reference's 4 content words, so contextual recall stays 1.0.
RESTORE_SENTENCES = ("Run tracker restore ID to bring an archived task back to the active list. ",
                     " tracker purge deletes archived tasks older than 90 days for good, and a purged task "
                     "cannot be restored.")


def bundled() -> dict:
    return json.loads(BUNDLED.read_text())


def saved(folder: Path, name: str, report: dict) -> str:
    path = folder / name
    path.write_text(json.dumps(report))
    return str(path)


def run_compare(capsys, a: str, b: str) -> tuple[int, str, str]:
    code = compare.main([a, b])
    out, err = capsys.readouterr()
    return code, out, err


def listed(out: str, heading: str) -> list[str]:
    """The case ids on the line that starts with `heading`, e.g. 'broken by B'."""
    line = next(line for line in out.splitlines() if line.startswith(heading + " ("))
    names = line.split("): ", 1)[1] if "): " in line else ""
    return [name.split(" (")[0] for name in names.split(", ") if name]


def row(report: dict, case_id: str) -> dict:
    return next(r for r in report["rows"] if r["id"] == case_id)


# ---- the same run twice ---------------------------------------------------------------------------------

def test_a_run_compared_with_itself_has_nothing_fixed_or_broken(capsys):
    code, out, _ = run_compare(capsys, str(BUNDLED), str(BUNDLED))
    assert code == 0
    assert "fixed by B (0)" in out and "broken by B (0)" in out


# ---- a run recorded after a deliberate change -----------------------------------------------------------

@pytest.fixture(scope="module")
def changed_run(tmp_path_factory) -> Path:
    """A copy of the project whose archive page no longer says how to restore a task, recorded offline."""
    copy = copy_project(tmp_path_factory.mktemp("project"))
    docs = json.loads((copy / "docs.json").read_text())
    archive = next(page for page in docs if page["id"] == "archive")
    for sentence in RESTORE_SENTENCES:
        assert sentence in archive["text"]
        archive["text"] = archive["text"].replace(sentence, "")
    archive["title"] = "Archiving tasks"
    (copy / "docs.json").write_text(json.dumps(docs, indent=2) + "\n")
    with pytest.MonkeyPatch.context() as mp:  # `python evaluate.py --live` in the copy, in this process
        mp.chdir(copy)
        for name, value in OFFLINE.items():
            mp.setenv(name, value)
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            code = evaluate.main(["--live"])
    assert code == 0, err.getvalue()
    return copy / "runs" / "docs-assistant+rules+hash+lexical.json"


def test_a_deliberate_change_lists_the_case_it_broke_with_its_stage(capsys, changed_run):
    stage = row(json.loads(changed_run.read_text()), "restore")["first_failure"]
    code, out, _ = run_compare(capsys, str(BUNDLED), str(changed_run))
    assert code == 0
    assert "restore" in listed(out, "broken by B")
    assert f"  restore: {stage}: " in out


def test_a_deliberate_change_lists_no_unchanged_case(capsys, changed_run):
    before, after = bundled(), json.loads(changed_run.read_text())
    unchanged = [r["id"] for r in before["rows"] if r["first_failure"] == row(after, r["id"])["first_failure"]]
    _, out, _ = run_compare(capsys, str(BUNDLED), str(changed_run))
    named = listed(out, "fixed by B") + listed(out, "broken by B") + listed(out, "changed stage")
    assert unchanged and not set(unchanged) & set(named)


def test_different_pages_are_compared_not_refused(capsys, changed_run):
    assert json.loads(changed_run.read_text())["key"]["pages_sha"] != bundled()["key"]["pages_sha"]
    code, _, err = run_compare(capsys, str(BUNDLED), str(changed_run))
    assert code == 0 and err == ""


# ---- what counts as a change ----------------------------------------------------------------------------

def test_a_case_failing_at_another_stage_is_listed_as_changed_stage(capsys, tmp_path):
    after = bundled()
    failing = next(r for r in after["rows"] if r["first_failure"] not in (None, "error", "answer_relevancy"))
    was = failing["first_failure"]
    failing["first_failure"] = "answer_relevancy"
    _, out, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert listed(out, "changed stage") == [failing["id"]]
    assert f"{failing['id']} ({was} -> answer_relevancy)" in out


def test_an_errored_case_is_listed_apart_not_as_broken(capsys, tmp_path):
    after = bundled()
    row(after, "restore").update(first_failure="error", error="TimeoutError: judge did not answer")
    _, out, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert listed(out, "broken by B") == []
    assert listed(out, "errored in B") == ["restore"]
    assert "  restore: TimeoutError: judge did not answer" in out


def test_an_errored_case_is_left_out_of_the_pass_rate(capsys, tmp_path):
    after = bundled()
    row(after, "restore").update(first_failure="error", error="TimeoutError: judge did not answer")
    _, out, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    scored = len(after["rows"]) - 1
    passing = sum(r["first_failure"] is None for r in after["rows"])
    assert f"pass {passing}/{scored} = " in out.splitlines()[1] and "1 errored" in out.splitlines()[1]


@pytest.mark.parametrize("field, value", [("model", "gemma4:e2b"), ("prompt_sha", "000000000000")])
def test_a_different_model_or_prompt_is_compared(capsys, tmp_path, field, value):
    after = bundled()
    after["key"][field] = value
    code, _, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert code == 0


# ---- refusals -------------------------------------------------------------------------------------------

def other(value):
    """A value that differs from the recorded one, whatever the bundled report holds today."""
    return value + 2 if isinstance(value, int) else f"{value}-other"


@pytest.mark.parametrize("field", ["judge", "embedder", "cases", "cases_sha", "k", "strict_faithfulness"])
def test_runs_measured_differently_are_refused_naming_the_field(capsys, tmp_path, field):
    after = bundled()
    recorded, value = after["key"][field], other(after["key"][field])
    after["key"][field] = value
    code, out, err = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert code == 2 and out == ""
    assert f"runs differ in {field} (A: {recorded}, B: {value})" in err
    assert len(err.splitlines()) == 1


def test_runs_judged_at_another_threshold_are_refused(capsys, tmp_path):
    after = bundled()
    after["threshold"] = 0.5
    code, _, err = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert code == 2 and "threshold (A: 0.7, B: 0.5)" in err


def test_every_differing_measurement_is_named(capsys, tmp_path):
    after = bundled()
    judge, embedder = after["key"]["judge"], after["key"]["embedder"]
    after["key"].update(judge=other(judge), embedder=other(embedder))
    _, _, err = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert f"judge (A: {judge}, B: {other(judge)})" in err and f"embedder (A: {embedder}, B: {other(embedder)})" in err


def test_malformed_json_exits_2_naming_the_file(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"key": {"judge": "lexical"},\n')
    code, out, err = run_compare(capsys, str(BUNDLED), str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"compare.py: {bad}: malformed JSON at line 2 column 1") and len(err.splitlines()) == 1


def test_a_missing_file_exits_2_naming_it(capsys, tmp_path):
    code, _, err = run_compare(capsys, str(tmp_path / "none.json"), str(BUNDLED))
    assert code == 2 and err == f"compare.py: {tmp_path / 'none.json'}: file not found\n"


def test_a_json_file_that_is_not_a_report_exits_2_naming_it(capsys):
    calibration = str(HERE / "runs" / "calibration+lexical.json")
    code, _, err = run_compare(capsys, str(BUNDLED), calibration)
    assert code == 2 and err.startswith(f"compare.py: {calibration}: not an evaluation report")


# ---- a report of the wrong shape: one line naming the file and the field, never a traceback -------------

VALID_FIRST_FAILURES = ", ".join([*STAGES, "error"])


def refused(capsys, a: str, b: str, *extra: str) -> str:
    """compare.py's one-line refusal: exit 2, nothing on stdout, one line on stderr."""
    code = compare.main([a, b, *extra])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and err.endswith("\n"), err
    return err.rstrip("\n")


def test_an_unknown_stage_is_refused_naming_the_file_as_typed_the_row_and_the_valid_stages(capsys, tmp_path,
                                                                                          monkeypatch):
    after = bundled()
    after["rows"][3]["first_failure"] = "x"  # passing in A: listed as broken, its reason read
    saved(tmp_path, "b.json", after)
    monkeypatch.chdir(tmp_path)
    err = refused(capsys, str(BUNDLED), "b.json")
    assert err == (f"compare.py: b.json: rows[3] (config-keys).first_failure: unknown stage 'x' "
                   f"(valid: {VALID_FIRST_FAILURES})")


def unset(field: str):
    return lambda r: r.pop(field)


def put(field: str, value):
    return lambda r: r.update({field: value})


def judged(name: str, **fields):
    def change(r):
        r["judged"][name].update(fields)
        for field, value in fields.items():
            if value is unset:
                del r["judged"][name][field]
    return change


def failing_at(stage: str, **fields):
    """The row fails at `stage` in B (it passes in A, so compare reads why), its stage field set to `fields`."""
    return lambda r: r.update(first_failure=stage, **fields)


@pytest.mark.parametrize("change, problem", [
    (put("id", ["backup"]), "rows[0].id: expected a string, got a list"),
    (put("id", 7), "rows[0].id: expected a string, got a number"),
    (put("first_failure", ["tools"]), "rows[0] (backup).first_failure: expected a stage name or null, got a list"),
    (put("first_failure", "Tools"), f"rows[0] (backup).first_failure: unknown stage 'Tools' "
                                    f"(valid: {VALID_FIRST_FAILURES})"),
    (put("tools", {"score": 1.0}), "rows[0] (backup).tools.pass: missing"),
    (put("tools", "passed"), "rows[0] (backup).tools: expected an object or null, got a string"),
    (put("retrieval", {"hit": True}), "rows[0] (backup).retrieval.recall: missing"),
    (put("judged", None), "rows[0] (backup).judged: expected an object, got null"),
    (judged("faithfulness", score=unset), "rows[0] (backup).judged.faithfulness.score: missing"),
    (judged("faithfulness", score="0.9"),
     "rows[0] (backup).judged.faithfulness.score: expected a number or null, got a string"),
    (failing_at("behaviour", behaviour={"pass": False}), "rows[0] (backup).behaviour.failures: missing"),
    (failing_at("behaviour"), "rows[0] (backup).behaviour: null, but first_failure names it"),
    (failing_at("tools", tools=None), "rows[0] (backup).tools: null, but first_failure names it"),
    (failing_at("retrieval", retrieved=None),
     "rows[0] (backup).retrieved: expected a list of strings, got null"),
    (failing_at("retrieval", counterfactual={"for": "retrieval"}),
     "rows[0] (backup).counterfactual.fixed: missing"),
    (failing_at("faithfulness", judged={}), "rows[0] (backup).judged.faithfulness: missing, but first_failure "
                                            "names it"),
], ids=["list id", "number id", "list stage", "unknown stage", "tools without pass", "tools a string",
        "retrieval without recall", "judged null", "judged without score", "score a string",
        "behaviour without failures", "behaviour missing", "tools null", "retrieved null",
        "counterfactual without fixed", "judged stage missing"])
def test_a_row_of_the_wrong_shape_is_refused_in_one_line_naming_the_file_and_field(capsys, tmp_path, change,
                                                                                   problem):
    after = bundled()
    change(after["rows"][0])
    path = saved(tmp_path, "b.json", after)
    assert refused(capsys, str(BUNDLED), path) == f"compare.py: {path}: {problem}"
    # either side: the baseline is checked as well
    assert refused(capsys, path, str(BUNDLED)) == f"compare.py: {path}: {problem}"


def test_a_case_id_with_a_line_break_is_quoted_to_keep_the_refusal_on_one_line(capsys, tmp_path):
    after = bundled()
    after["rows"][0].update(id="back\nup", first_failure="x")
    path = saved(tmp_path, "b.json", after)
    assert refused(capsys, str(BUNDLED), path).startswith(f"compare.py: {path}: rows[0] ('back\\nup').first_failure: ")


def test_a_row_twice_is_refused(capsys, tmp_path):
    after = bundled()
    after["rows"].append(dict(after["rows"][0]))
    path = saved(tmp_path, "b.json", after)
    assert refused(capsys, str(BUNDLED), path) == \
        f"compare.py: {path}: rows[{CASES}] (backup).id: the same id as rows[0]"


@pytest.mark.parametrize("change, problem", [
    (lambda report: report["key"].pop("judge"), "key.judge: missing"),
    (lambda report: report["key"].update(k=[3]), "key.k: expected a string, number, boolean or null, got a list"),
    (lambda report: report.update(key=[]), "key: expected an object, got a list"),
    (lambda report: report.update(threshold="0.7"), "threshold: expected a number, got a string"),
    (lambda report: report.update(split=["dev"]), "split: expected a string, got a list"),
    (lambda report: report.update(rows={"backup": {}}), "rows: expected a list, got an object"),
    (lambda report: report["rows"].append("restore"),
     f"rows[{len(bundled()['rows'])}]: expected an object, got a string"),
])
def test_a_report_key_or_field_of_the_wrong_shape_is_refused_naming_it(capsys, tmp_path, change, problem):
    after = bundled()
    change(after)
    path = saved(tmp_path, "b.json", after)
    assert refused(capsys, str(BUNDLED), path) == f"compare.py: {path}: {problem}"


def test_a_refused_report_writes_no_html(capsys, tmp_path):
    after = bundled()
    after["rows"][3]["first_failure"] = "x"
    out_path = tmp_path / "diff.html"
    refused(capsys, str(BUNDLED), saved(tmp_path, "b.json", after), "--html", str(out_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]


def test_the_bundled_reports_pass_the_shape_check():
    for path in (BUNDLED, BUNDLED_ALL):
        assert compare.load_report(str(path))["rows"]


# ---- two reports of different case sets -----------------------------------------------------------------

def test_a_dev_report_and_an_all_report_are_refused_naming_both_splits_and_the_cases(capsys):
    dev, every = bundled(), json.loads(BUNDLED_ALL.read_text())
    assert (dev["split"], every["split"]) == ("dev", "all")
    extra = [r["id"] for r in every["rows"] if r["id"] not in {d["id"] for d in dev["rows"]}]
    assert len(extra) > 3
    err = refused(capsys, str(BUNDLED), str(BUNDLED_ALL))
    assert err == (f"compare.py: A ({BUNDLED}) is a report of the dev split, B ({BUNDLED_ALL}) of the all split, "
                   f"so their case sets differ ({len(extra)} only in B: {', '.join(extra[:3])} and "
                   f"{len(extra) - 3} more); compare reports of the same split, or pass --across to compare them "
                   "anyway")


def test_reports_of_the_same_split_with_other_cases_are_refused_naming_them(capsys, tmp_path):
    after = bundled()
    row(after, "restore")["id"] = "restore-2"
    after["rows"] = [r for r in after["rows"] if r["id"] != "backup"]
    path = saved(tmp_path, "b.json", after)
    err = refused(capsys, str(BUNDLED), path)
    assert err == (f"compare.py: A ({BUNDLED}) and B ({path}) hold different cases (2 only in A: backup, restore; "
                   f"1 only in B: restore-2); compare reports of the same cases, or pass --across to compare them "
                   "anyway")


def test_a_report_without_a_split_is_compared_by_its_cases(capsys, tmp_path):
    after = bundled()
    del after["split"]
    code, _, err = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert code == 0 and err == ""


# ---- --html '' ------------------------------------------------------------------------------------------

def test_an_empty_html_path_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = refused(capsys, str(BUNDLED), str(BUNDLED), "--html", "")
    assert err == "compare.py: --html: empty path; name the page to write, e.g. --html diff.html"
    assert list(tmp_path.iterdir()) == []


# ---- stdout that cannot take the text: whichstage._util.console --------------------------------------------------

def compare_process(stdout, *reports: Path) -> subprocess.CompletedProcess:
    """`python compare.py A B` in the repository, its stdout on `stdout`."""
    return subprocess.run([sys.executable, "compare.py", *map(str, reports)], cwd=HERE, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def test_a_reader_closing_the_pipe_ends_compare_quietly_with_exit_0():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before compare writes a byte, as `| head -0` does, every time
    try:
        done = compare_process(write_end, BUNDLED_ALL, BUNDLED_ALL)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")  # no traceback, no "Exception ignored ... BrokenPipeError"


def test_a_reader_taking_one_line_ends_compare_with_exit_0():
    with subprocess.Popen([sys.executable, "compare.py", str(BUNDLED), str(BUNDLED)], cwd=HERE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        first = proc.stdout.readline()
        proc.stdout.close()  # `| head -1`
        err = proc.stderr.read()
    assert (proc.returncode, err) == (0, "") and first.startswith(f"A: {BUNDLED}")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_stdout_on_a_full_device_exits_2_with_one_line():
    with open("/dev/full", "w") as full:
        done = compare_process(full, BUNDLED, BUNDLED)
    assert (done.returncode, done.stderr) == (2, "compare.py: stdout: cannot write: No space left on device\n")


class FailingStdout(io.StringIO):
    """A stdout whose writes fail with `error`, as a closed pipe or a full disk makes them."""

    def __init__(self, error: OSError):
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


def test_console_stops_quietly_when_the_reader_left(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", FailingStdout(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    assert console.write_stdout("text", command="compare.py") == 0
    print("later output goes nowhere")  # stdout is os.devnull now: no error
    assert sys.stdout.name == os.devnull
    sys.stdout.close()
    assert capsys.readouterr().err == ""


def test_console_names_the_command_when_stdout_cannot_be_written(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", FailingStdout(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    assert console.write_stdout("text", command="evaluate.py") == 2
    assert sys.stdout.name == os.devnull
    sys.stdout.close()
    assert capsys.readouterr().err == f"evaluate.py: stdout: cannot write: {os.strerror(errno.ENOSPC)}\n"


def test_console_writes_the_text_and_says_carry_on(capsys):
    assert console.write_stdout("one\ntwo", command="compare.py") is None
    assert capsys.readouterr().out == "one\ntwo\n"


# ---- the exact McNemar test (stats.mcnemar_exact) -------------------------------------------------------

# zeros on either side, ties, one-sided changes around the 5% line, and large or lopsided n
MCNEMAR_GRID = [(0, 1), (1, 0), (1, 1), (2, 0), (0, 2), (3, 3), (7, 8), (0, 5), (0, 6), (6, 0), (1, 7), (2, 9),
                (3, 40), (40, 3), (12, 30), (50, 50), (500, 620), (1000, 0)]


@pytest.mark.parametrize("b, c", MCNEMAR_GRID)
def test_mcnemar_p_value_equals_scipys_two_sided_binomial_test(b, c):
    from scipy import stats as scipy_stats  # here: scipy.stats takes ~0.5 s to import, and only two tests use it

    expected = scipy_stats.binomtest(min(b, c), b + c, 0.5).pvalue
    assert stats.mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=0)


def test_mcnemar_p_value_is_1_when_no_case_changed_outcome():
    assert stats.mcnemar_exact(0, 0) == 1.0  # scipy refuses n = 0; nothing changed is no evidence at all


def test_mcnemar_p_value_is_symmetric_and_exact_at_the_5_percent_line():
    # all changes one way: 5 of them are not enough (2/32), 6 are (2/64)
    assert stats.mcnemar_exact(0, 5) == stats.mcnemar_exact(5, 0) == 0.0625
    assert stats.mcnemar_exact(0, 6) == 0.03125


def test_mcnemar_refuses_negative_counts():
    with pytest.raises(ValueError):
        stats.mcnemar_exact(-1, 3)


def test_rate_text_rounds_the_exact_rate_once():
    # the stored bounds are 0.095 and 0.905; rounding those again would print 10%-90%
    assert stats.rate_text(stats.rate(1, 2)) == "1/2 = 50% (95% CI 9%-91%)"
    # 45.45%: the stored rate 0.455 printed again would read 46%
    assert stats.rate_text(stats.rate(5, 11)) == "5/11 = 45% (95% CI 21%-72%)"


@pytest.mark.parametrize("passed, total", [(0, 1), (1, 1), (1, 2), (5, 11), (8, 9), (1, 9), (9, 10), (19, 25),
                                           (47, 51), (0, 30), (30, 30), (333, 1000)])
def test_wilson_interval_equals_scipys(passed, total):
    from scipy import stats as scipy_stats

    expected = scipy_stats.binomtest(passed, total).proportion_ci(confidence_level=0.95, method="wilson")
    assert stats.wilson_interval(passed, total) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_the_8_of_9_interval_is_the_95_percent_one():
    # 95% is z = 1.959964: the lower bound is 56.50003%, so 57%; z = 1.96 gave 56.49938% and printed 56%
    low, high = stats.wilson_interval(8, 9)
    assert 0.565 < low < 0.56501 and 0.98010 < high < 0.98011
    assert stats.rate_text(stats.rate(8, 9)) == "8/9 = 89% (95% CI 57%-98%)"


def rows_passing(passed: int, total: int) -> list[dict]:
    """`total` small-talk rows, the tools stage passing in the first `passed`."""
    rows = []
    for i in range(total):
        tools = {"score": 1.0, "reason": "r", "unexpected": [] if i < passed else ["get_issue"], "missing": [],
                 "wrong_args": [], "pass": i < passed}
        row = {"id": f"c{i}", "question": "q", "answer": "a", "calls": [], "tool_calls": [], "retrieved": [],
               "tools": tools, "retrieval": None, "behaviour": None, "judged": {}, "category": "smalltalk"}
        rows.append({**row, "first_failure": first_failure(row)})
    return rows


def report_of(rows: list[dict]) -> dict:
    key = {"cases": "c@1", "cases_sha": "0", "model": "m", "embedder": "e", "judge": "j", "k": 3,
           "strict_faithfulness": True}
    return {"key": key, "k": 3, "threshold": 0.7, "split": "dev", "rows": rows, "summary": summarize(rows, 3)}


def test_every_report_prints_5_of_11_as_45_percent_and_8_of_9_from_57_percent():
    """The markdown report, the HTML page, compare.py's text and page, and the baseline gate's message."""
    from whichstage.analysis import baseline
    from whichstage.render.html import html
    from whichstage.render.markdown import markdown

    for (passed, total), text in (((5, 11), "5/11 = 45% (95% CI 21%-72%)"), ((8, 9), "8/9 = 89% (95% CI 57%-98%)")):
        report = report_of(rows_passing(passed, total))
        assert f"tools {text}" in markdown(report) and f"{text.split(' = ')[1]} |" in markdown(report)
        assert text in html(report)
        everything = report_of(rows_passing(total, total))
        assert f"-> {text}" in compare.render("a", everything, "b", report)
        assert text in compare.html_page("a", everything, "b", report)
        verdict = baseline.check(report, baseline.from_report(everything))
        assert f"overall: pass rate 100% -> {text.split(' = ')[1].split()[0]}" in verdict.text


# ---- the paired test in compare.py: verdicts, pairing, the HTML page ------------------------------------

DOC_CASES = ["backup", "restore", "config-keys", "dry-run-import", "token-leak", "revoke-token"]


def failing_faithfulness(report: dict, case_ids: list[str], reason: str = "claim not in the context") -> dict:
    """`report` with faithfulness failing for those cases, first failure recomputed as evaluate does."""
    for case_id in case_ids:
        r = row(report, case_id)
        r["judged"]["faithfulness"].update(score=0.0, reason=reason)
        r["first_failure"] = first_failure(r)
        assert r["first_failure"] == "faithfulness"
    return report


def measured(report: dict, stage: str) -> int:
    """How many rows of `report` carry a measurement of `stage`, read from the rows' own fields."""
    if stage in ("tools", "retrieval"):
        return sum(r.get(stage) is not None for r in report["rows"])
    return sum(stage in r.get("judged", {}) for r in report["rows"])


# The bundled dev report: every row scored (none errored), so every case pairs with itself.
CASES = len(bundled()["rows"])


def stage_line(out: str, stage: str) -> str:
    """The paired-test line for one stage, e.g. '  faithfulness:      0 fixed, 6 broken of 9 ...'."""
    return next(line for line in out.splitlines() if line.lstrip().startswith(stage + ": ") and "McNemar" in line)


def test_the_bundled_report_has_no_errored_row():
    assert CASES > 10 and not any(r.get("error") for r in bundled()["rows"])


def test_one_broken_case_is_noise(capsys, tmp_path):
    after = failing_faithfulness(bundled(), ["restore"])
    _, out, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert (f"overall: 0 fixed, 1 broken of {CASES} paired cases; exact McNemar p = 1: not distinguishable from noise "
            "at 5%") in out.splitlines()


def test_six_broken_cases_and_none_fixed_make_b_worse(capsys, tmp_path):
    after = failing_faithfulness(bundled(), DOC_CASES)
    _, out, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert (f"overall: 0 fixed, 6 broken of {CASES} paired cases; exact McNemar p = 0.031: B is worse (significant "
            "at 5%)") in out.splitlines()
    faithful = measured(bundled(), "faithfulness")
    assert stage_line(out, "faithfulness").endswith(f"0 fixed, 6 broken of {faithful} paired cases; exact McNemar "
                                                    "p = 0.031: B is worse (significant at 5%)")
    assert stage_line(out, "tools").endswith("not distinguishable from noise at 5%")


def test_six_fixed_cases_and_none_broken_make_b_better(capsys, tmp_path):
    before = failing_faithfulness(bundled(), DOC_CASES)
    _, out, _ = run_compare(capsys, saved(tmp_path, "a.json", before), str(BUNDLED))
    assert f"overall: 6 fixed, 0 broken of {CASES} paired cases; exact McNemar p = 0.031: B is better (significant at " \
           "5%)" in out.splitlines()


def test_five_changes_all_one_way_are_still_noise(capsys, tmp_path):
    after = failing_faithfulness(bundled(), DOC_CASES[:5])
    _, out, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    assert f"overall: 0 fixed, 5 broken of {CASES} paired cases; exact McNemar p = 0.062: not distinguishable from " \
           "noise at 5%" in out.splitlines()


def test_a_p_value_just_under_5_percent_is_not_shown_as_5_percent():
    assert compare_diff.p_text(0.0496) == "0.0496" and compare_diff.p_text(0.0504) == "0.05"


def test_per_stage_pairing_skips_errored_rows_and_unmeasured_stages(tmp_path):
    before, after = bundled(), failing_faithfulness(bundled(), ["backup", "restore"])
    # errored in B: its faithfulness failure would otherwise count as broken
    row(after, "restore").update(first_failure="error", error="TimeoutError: judge did not answer")
    # measured in B only: retrieval fails there, but A never measured it, so the case is not paired for it
    row(before, "config-keys")["retrieval"] = None
    row(after, "config-keys")["retrieval"].update(recall=0.0, hit=False, missed=["config"])
    row(after, "config-keys")["first_failure"] = first_failure(row(after, "config-keys"))
    # faithfulness: every measured case but the errored restore
    assert compare_diff.paired_test(before["rows"], after["rows"], "faithfulness") == \
        {"fixed": 0, "broken": 1, "paired": measured(bundled(), "faithfulness") - 1, "p": 1.0}
    # retrieval: every measured case but the errored restore and config-keys, unmeasured in A
    assert compare_diff.paired_test(before["rows"], after["rows"], "retrieval") == \
        {"fixed": 0, "broken": 0, "paired": measured(bundled(), "retrieval") - 2, "p": 1.0}
    assert compare_diff.paired_test(before["rows"], after["rows"]) == \
        {"fixed": 0, "broken": 2, "paired": CASES - 1, "p": 0.5}


def test_the_paired_lines_count_only_cases_both_runs_measured(capsys, tmp_path):
    after = bundled()
    row(after, "restore").update(first_failure="error", error="TimeoutError: judge did not answer")
    _, out, _ = run_compare(capsys, str(BUNDLED), saved(tmp_path, "b.json", after))
    # the cases with retrieval, less the errored one
    assert f"of {measured(after, 'retrieval') - 1} paired cases" in stage_line(out, "retrieval")
    assert f"of {CASES - 1} paired cases" in stage_line(out, "tools")


# ---- --html ---------------------------------------------------------------------------------------------

MALICIOUS = "<script>alert('x')</script>"


def test_html_page_holds_the_verdict_and_escapes_every_value(capsys, tmp_path):
    before, after = bundled(), failing_faithfulness(bundled(), DOC_CASES, reason="<img src=x onerror=alert(1)>")
    for report in (before, after):
        row(report, "restore")["id"] = MALICIOUS
    out_path = tmp_path / "diff.html"
    code = compare.main([saved(tmp_path, "a.json", before), saved(tmp_path, "b.json", after), "--html", str(out_path)])
    out, err = capsys.readouterr()
    page = out_path.read_text()
    assert code == 0 and err == "" and f"HTML written to {out_path}" in out
    assert "B is worse (significant at 5%)" in page and f"0 fixed, 6 broken of {CASES} paired cases" in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page and "<script" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img" not in page
    assert "http://" not in page and "https://" not in page and "<link" not in page


def test_html_page_has_a_row_per_stage_with_its_counts(capsys, tmp_path):
    after = failing_faithfulness(bundled(), DOC_CASES)
    out_path = tmp_path / "diff.html"
    compare.main([str(BUNDLED), saved(tmp_path, "b.json", after), "--html", str(out_path)])
    page = out_path.read_text()
    for stage in ["overall", *STAGES]:
        assert f'<tr data-stage="{stage}">' in page
    faithfulness = page.split('<tr data-stage="faithfulness">')[1].split("</tr>")[0]
    paired = measured(bundled(), "faithfulness")
    assert (f'<td class="num">0</td><td class="num">6</td><td class="num">{paired}</td><td class="num">0.031</td>'
            '<td class="fail">B is worse (significant at 5%)</td>') in faithfulness


@pytest.mark.parametrize("where", ["a folder", "under a file"])
def test_an_unwritable_html_path_exits_2_with_one_line(capsys, tmp_path, where):
    (tmp_path / "taken.html").mkdir()
    (tmp_path / "plain").write_text("")
    out_path = tmp_path / ("taken.html" if where == "a folder" else "plain/diff.html")
    code = compare.main([str(BUNDLED), str(BUNDLED), "--html", str(out_path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"compare.py: {out_path}: cannot write: ") and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain", "taken.html"]  # no temp file left behind

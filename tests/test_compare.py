"""compare.py: the per-case diff of two saved reports, and its refusals. Offline: the bundled report and a
run recorded with the offline backends in a copy of the project."""
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import compare
import evaluate
from harness import stages
from harness import stats
from conftest import copy_project

HERE = Path(__file__).parent.parent
BUNDLED = HERE / "runs" / "docs-assistant+rules+hash+lexical.json"
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
        mp.setattr(evaluate, "HERE", copy)
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
        rows.append({**row, "first_failure": stages.first_failure(row)})
    return rows


def report_of(rows: list[dict]) -> dict:
    key = {"cases": "c@1", "cases_sha": "0", "model": "m", "embedder": "e", "judge": "j", "k": 3,
           "strict_faithfulness": True}
    return {"key": key, "k": 3, "threshold": 0.7, "split": "dev", "rows": rows, "summary": stages.summarize(rows, 3)}


def test_every_report_prints_5_of_11_as_45_percent_and_8_of_9_from_57_percent():
    """The markdown report, the HTML page, compare.py's text and page, and the baseline gate's message."""
    from harness import baseline
    from harness.html_report import html
    from harness.report import markdown

    for (passed, total), text in (((5, 11), "5/11 = 45% (95% CI 21%-72%)"), ((8, 9), "8/9 = 89% (95% CI 57%-98%)")):
        report = report_of(rows_passing(passed, total))
        assert f"tools {text}" in markdown(report) and f"{text.split(' = ')[1]} |" in markdown(report)
        assert text in html(report)
        everything = report_of(rows_passing(total, total))
        assert f"-> {text}" in compare.render("a", everything, "b", report)
        assert text in compare.html_page("a", everything, "b", report)
        verdict = baseline.check(report, baseline.from_report(everything))
        assert f"tools: pass rate 100% -> {text.split(' = ')[1].split()[0]}" in verdict.text


# ---- the paired test in compare.py: verdicts, pairing, the HTML page ------------------------------------

DOC_CASES = ["backup", "two-laptops", "restore", "config-keys", "pipe-colors", "dry-run-import"]


def failing_faithfulness(report: dict, case_ids: list[str], reason: str = "claim not in the context") -> dict:
    """`report` with faithfulness failing for those cases, first failure recomputed as evaluate does."""
    for case_id in case_ids:
        r = row(report, case_id)
        r["judged"]["faithfulness"].update(score=0.0, reason=reason)
        r["first_failure"] = stages.first_failure(r)
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
    assert compare.p_text(0.0496) == "0.0496" and compare.p_text(0.0504) == "0.05"


def test_per_stage_pairing_skips_errored_rows_and_unmeasured_stages(tmp_path):
    before, after = bundled(), failing_faithfulness(bundled(), ["backup", "restore"])
    # errored in B: its faithfulness failure would otherwise count as broken
    row(after, "restore").update(first_failure="error", error="TimeoutError: judge did not answer")
    # measured in B only: retrieval fails there, but A never measured it, so the case is not paired for it
    row(before, "two-laptops")["retrieval"] = None
    row(after, "two-laptops")["retrieval"].update(recall=0.0, hit=False, missed=["sync"])
    row(after, "two-laptops")["first_failure"] = stages.first_failure(row(after, "two-laptops"))
    # faithfulness: every measured case but the errored restore
    assert compare.paired_test(before["rows"], after["rows"], "faithfulness") == \
        {"fixed": 0, "broken": 1, "paired": measured(bundled(), "faithfulness") - 1, "p": 1.0}
    # retrieval: every measured case but the errored restore and two-laptops, unmeasured in A
    assert compare.paired_test(before["rows"], after["rows"], "retrieval") == \
        {"fixed": 0, "broken": 0, "paired": measured(bundled(), "retrieval") - 2, "p": 1.0}
    assert compare.paired_test(before["rows"], after["rows"]) == \
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
    for stage in ["overall", *stages.STAGES]:
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

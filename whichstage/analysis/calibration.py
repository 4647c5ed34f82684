"""Check the judge itself against answers labelled by hand: known defects it must fail, good answers it
must pass. Each case is scored REPEATS times; the judge's verdict is 'fail' when every score is below the
threshold, 'pass' when none is, and 'unstable' otherwise.

`python calibrate.py [--project DIR]` replays the project's recordings/calibration+<judge>.json (the judge
DOCS_JUDGE names, or the one recorded); `--live` judges what is missing or stale. Each judge has its own
recording and report. The labelled cases are the file evals.toml names as `calibration`.
Per metric the table gives the judge's verdicts against the labels (pass/fail x good/defect, unstable apart),
agreement, Cohen's kappa and the labels' base rate (whichstage/scoring/agreement.py). Exit 1 when, for a metric as
evaluate.py configures it, agreement is below 90% or kappa below 0.6, or the metric is uncalibrated: fewer than
5 rows labelled good or 5 labelled defect. Rows for other configurations (default faithfulness) inform and
never gate.
"""
import sys


import argparse
import json
import os
from functools import partial
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, cast

from whichstage.recording.store import ABSENT, Cassette, Mode
from whichstage._util.files import RecordingError, printable_stdout, shown
from whichstage.recording.format import read_recording
from whichstage._util.exits import EXIT_INCOMPLETE
from whichstage.run.pipeline import Interrupted, stale_message
from whichstage.scoring import agreement as agree
from whichstage._util import console
from whichstage.project import criteria
from whichstage.project.criteria import Criterion
from whichstage.run.calibration_status import own_thresholds
from whichstage.judging.metrics import gating_metrics
from whichstage.model.errors import InputError
from whichstage.project.validate import load_calibration
from whichstage.model.dicts import CalibrationCaseDict, CalibrationRowDict, CalibrationSetDict
from whichstage.run.entries import judge_identity, sha, verdict_deps
from whichstage.calls.retries import CallFailed, with_retries
from whichstage.calls.pool import Pool, locked_once
from whichstage.calls.progress import Progress
from whichstage.calls.stopping import SigtermAsInterrupt
from whichstage.calls.options import add_live_options, check_live_options
from whichstage.providers.names import judge_name
from whichstage._util.console import cases as cases_text
from whichstage.run.files import CALIBRATION_PREFIX, file_part
from whichstage.render.files import write_if_changed
from whichstage.model.replay_check import verdict_problem
from whichstage.model.stages import THRESHOLD
from whichstage.scoring.summary import rounded
from whichstage._util.ending import ended
from whichstage._util.exits import WhichstageError

REPEATS = 3
AGREEMENT, KAPPA, MIN_ROWS = agree.AGREEMENT, agree.KAPPA, agree.MIN_ROWS
EXPECTED = agree.AGREES


def calibration_key(cases: CalibrationSetDict, judge: str, own: Sequence[Criterion] = (),
                    thresholds: Optional[dict[str, float]] = None) -> dict:
    """What the report was measured with; whichstage/run/calibration_status.py compares it with the project's."""
    from whichstage.providers.names import is_offline

    return {"cases": f"{cases['name']}@{cases['version']}", "cases_sha": sha(cases), **judge_identity(judge),
            "repeats": REPEATS, "offline": is_offline(judge), **criteria.key_part(list(own)),
            **({"thresholds": thresholds} if thresholds else {})}


def recording_path(folder: Path, judge: str) -> Path:
    """One calibration recording per judge: another judge never replaces it."""
    return folder / "recordings" / f"{CALIBRATION_PREFIX}{file_part(judge)}.json"


def recorded_judge(folder: Path) -> str:
    """The judge to replay: DOCS_JUDGE's, or the only one with a calibration recording."""
    if os.environ.get("DOCS_JUDGE"):
        return os.environ["DOCS_JUDGE"]
    found = sorted((folder / "recordings").glob(f"{CALIBRATION_PREFIX}*.json"))
    if len(found) != 1:
        raise RecordingError(f"{shown(folder / 'recordings')}: " + (
            "no calibration recording; record one with --live" if not found else
            f"{len(found)} calibration recordings; choose the judge with DOCS_JUDGE"))
    return read_recording(found[0])["key"]["judge"]


def deps_of(case: CalibrationCaseDict, judge: dict, own: dict[str, Criterion]):
    """A score depends on the judge (entries.judge_identity), the metric and the case fields it reads; a
    criterion's (`own`, by name) on its rubric too."""
    found, fields = own.get(case["metric"]), cast(Mapping[str, object], case)  # read by the names a metric reads
    deps = verdict_deps(case["metric"], judge, fields) if found is None else \
        criteria.verdict_deps(found, judge, {f: sha(fields[f]) for f in found.reads})
    return lambda value: deps


def verdict(scores: list[Optional[float]], threshold: float = THRESHOLD) -> str:
    known = [s for s in scores if s is not None]
    if len(known) < len(scores):
        return "error"
    below = [s < threshold for s in known]
    return "fail" if all(below) else "pass" if not any(below) else "unstable"


def spread(scores: list[Optional[float]]) -> Optional[float]:
    """The gap between a case's highest and lowest repeated score, exact; None when a repeat errored."""
    known = [s for s in scores if s is not None]
    return None if len(known) < len(scores) else max(known) - min(known)


def row(case: CalibrationCaseDict, runs: list[dict], threshold: float = THRESHOLD) -> CalibrationRowDict:
    scores = [r["score"] for r in runs]
    judged = verdict(scores, threshold)
    return {"id": case["id"], "metric": case["metric"], "label": case["label"], "note": case["note"],
            "scores": scores, "verdict": judged, "agrees": judged == EXPECTED[case["label"]],
            "spread": rounded(spread(scores)), "reason": runs[0]["reason"]}


def tables(rows: list[CalibrationRowDict], own: Sequence[str] = ()) -> dict[str, dict]:
    """Each metric's table of verdicts against labels, gating metrics (and the project's criteria, `own`)
    without a row included (empty)."""
    return agree.tables(((r["metric"], r["verdict"], r["label"]) for r in rows), gating_metrics(own))


def exact(rows: list[CalibrationRowDict], metric: str, own: Sequence[str] = ()) -> dict:
    """A metric's figures from its rows, unrounded (agreement.summary, and its widest spread): the gate and the
    table use these, and the stored figures are rounded to 3 places for storage only."""
    mine = [r for r in rows if r["metric"] == metric]
    spreads = [s for s in (spread(r["scores"]) for r in mine) if s is not None]
    table = agree.counts((r["verdict"], r["label"]) for r in mine)
    return {**agree.summary(table, metric in gating_metrics(own)), "max_spread": max(spreads) if spreads else None}


def per_metric(rows: list[CalibrationRowDict], own: Sequence[str] = ()) -> dict:
    """Per metric: defects caught, good answers passed, the table of verdicts against labels, agreement, kappa,
    base rate, the widest spread, whether it gates, and whether it has the rows to be calibrated."""
    summary = {}
    for metric, table in tables(rows, own).items():
        s = exact(rows, metric, own)
        caught, passed = table["fail"]["defect"], table["pass"]["good"]
        summary[metric] = {"defects_caught": f"{caught}/{agree.labelled(table, 'defect')}",
                           "good_passed": f"{passed}/{agree.labelled(table, 'good')}", "table": table,
                           **{k: None if s[k] is None else round(s[k], 3) for k in ("agreement", "kappa", "base_rate")},
                           "max_spread": rounded(s["max_spread"]), "gates": s["gates"], "calibrated": s["calibrated"],
                           "needs": s["needs"], "fails": s["fails"]}
    return summary


def gate_failures(rows: list[CalibrationRowDict], metrics: dict) -> list[str]:
    """The gating metrics that fail: agreement below AGREEMENT or kappa below KAPPA, compared exactly (0.8996
    fails, though it rounds to 0.9), or uncalibrated (fewer than MIN_ROWS good or defect rows)."""
    return [m for m, s in metrics.items() if s["gates"] and s["fails"]]


def calibrate(cases: CalibrationSetDict, tape: Cassette, judge: Callable, *, concurrency: int = 1, progress=None,
              own: Sequence[Criterion] = (), threshold_of: Callable[[str], float] = lambda stage: THRESHOLD) -> dict:
    """Score every case REPEATS times from the tape; in live mode, judge what is missing first. `own` are the
    project's criteria, each a gating metric; every verdict is at its stage's threshold (`threshold_of`,
    Project.threshold_of), as evaluate.py gates it."""
    named = criteria.by_name(list(own))
    thresholds = own_thresholds(cases, threshold_of)
    if tape.live:
        record(cases, tape, judge, concurrency, progress, named)
    rows: list[CalibrationRowDict] = []
    stale, judged_by = {}, judge_identity(tape.key["judge"])
    for case in cases["cases"]:
        found = [tape.lookup(f"{case['id']}/{i}", deps_of(case, judged_by, named)) for i in range(REPEATS)]
        threshold = thresholds.get(case["metric"], THRESHOLD)
        if any(value is ABSENT for value, _ in found):
            stale[case["id"]] = list(dict.fromkeys(why for _, reasons in found for why in reasons))
            rows.append({**row(case, [{"score": None, "reason": None}]), "verdict": "error", "agrees": False})
            continue
        rows.append(row(case, [value for value, _ in found], threshold))
    if stale and not tape.live:
        raise RecordingError(stale_message(tape, stale, len(rows)))
    metrics = per_metric(rows, list(named))
    failing = gate_failures(rows, metrics)
    return {"key": calibration_key(cases, tape.key["judge"], own, thresholds), "threshold": THRESHOLD,
            "thresholds": thresholds, "repeats": REPEATS,
            "agreement_needed": AGREEMENT, "kappa_needed": KAPPA, "rows_needed": MIN_ROWS, "rows": rows,
            "metrics": metrics, "gate_failed": failing, "errors": sum(r["verdict"] == "error" for r in rows)}


def measurer(case: CalibrationCaseDict, own: dict[str, Criterion]):
    """What judges one labelled row (a judging.Measure): its metric's, or its criterion's (`own`, by name)."""
    from whichstage.judging.metrics import Measure

    fields = (case["question"], case["answer"], case["reference"], case["context"])
    found = own.get(case["metric"])
    return Measure(case["metric"], *fields, case.get("expected_facts")) if found is None \
        else criteria.CriterionMeasure(found, *fields)


def record(cases: CalibrationSetDict, tape: Cassette, judge: Callable, concurrency: int, progress,
           own: Optional[dict[str, Criterion]] = None) -> None:
    pool, judged_by, own = Pool(concurrency), judge_identity(tape.key["judge"]), own or {}

    def score(case: CalibrationCaseDict, name: str) -> None:
        measure = measurer(case, own)
        compute = lambda: measure(judge())  # noqa: E731
        try:
            tape.get(name, deps_of(case, judged_by, own), lambda: with_retries(name, compute, progress.log))
        except CallFailed as e:
            progress.log(f"error: {e}")
        progress.advance(None)

    for case in cases["cases"]:
        for i in range(REPEATS):
            pool.submit(partial(score, case, f"{case['id']}/{i}"))
    pool.run()


def table(result: dict) -> str:
    width = max([26] + [len(r["id"]) + 2 for r in result["rows"]])
    lines = [f"{'case':<{width}}{'metric':<21}{'label':<8}{'scores':<20}judge"]
    for r in result["rows"]:
        scores = "[" + ", ".join("-" if s is None else f"{round(s, 2)}" for s in r["scores"]) + "]"
        mark = "" if r["agrees"] else "   <- disagrees"
        lines.append(f"{r['id']:<{width}}{r['metric']:<21}{r['label']:<8}{scores:<20}{r['verdict']}{mark}")
    lines.append(f"\n{'':<21}{'judge pass':<12}{'judge fail':<12}")
    lines.append(f"{'metric':<21}{'good':<5}{'defect':<7}{'good':<5}{'defect':<7}{'unstable':<10}{'agreement':<11}"
                 f"{'κ':<7}{'base rate':<11}{'spread':<8}{'role':<14}rows")
    gating = [m for m, s in result["metrics"].items() if s["gates"]]  # the project's criteria among them
    for metric in result["metrics"]:
        s = exact(result["rows"], metric, gating)
        t = s["table"]
        apart = t["unstable"]["good"] + t["unstable"]["defect"]
        errored = t["error"]["good"] + t["error"]["defect"]
        role = ("gates: FAILS" if s["fails"] else "gates") if s["gates"] else "informs"
        rows = "calibrated" if s["calibrated"] else f"uncalibrated ({agree.lacking(t)})"
        figures = [f"{s['agreement']:.0%}" if s["agreement"] is not None else "-",
                   f"{s['kappa']:.2f}" if s["kappa"] is not None else "-",
                   f"{s['base_rate']:.0%}" if s["base_rate"] is not None else "-",
                   f"{s['max_spread']:.2f}" if s["max_spread"] is not None else "-"]
        lines.append(f"{metric:<21}{t['pass']['good']:<5}{t['pass']['defect']:<7}{t['fail']['good']:<5}"
                     f"{t['fail']['defect']:<7}{str(apart) + (f'+{errored} err' if errored else ''):<10}"
                     f"{figures[0]:<11}{figures[1]:<7}{figures[2]:<11}{figures[3]:<8}{role:<14}{rows}")
    disagreements = [r for r in result["rows"] if not r["agrees"]]
    if disagreements:
        lines.append("")
    for r in disagreements:
        lines.append(f"DISAGREE {r['id']} ({r['label']}: {r['note']}) judged {r['verdict']}: {r['reason']}")
    judge, most = result["key"]["judge"], result.get("rows_needed", MIN_ROWS)
    own = result.get("thresholds") or {}
    own = f" ({'; '.join(f'{m} at {t}' for m, t in own.items())})" if own else ""
    needed = (f"agreement >= {result['agreement_needed']:.0%}, κ >= {result.get('kappa_needed', KAPPA)}, "
              f">= {most} good and >= {most} defect rows; threshold {result['threshold']}{own}, "
              f"{result['repeats']} scores each")
    if result["gate_failed"]:
        failing = result["gate_failed"]
        lines.append(f"\njudge {judge} FAILS calibration on {len(failing)} gating metric{'s' * (len(failing) != 1)} "
                     f"(each needs {needed}):")
        lines += [f"  FAIL {m}: {', '.join(exact(result['rows'], m, gating)['fails'])}" for m in failing]
    else:
        lines.append(f"\njudge {judge} is calibrated: every gating metric has {needed}.")
    return "\n".join(lines)


def run_calibration(project, live: bool = False, rerecord: bool = False, concurrency: int = 1,
                    quiet: bool = True) -> dict:
    """Judge the labelled cases of `project` (a whichstage.project.config.Project; live: what is missing or stale),
    write
    runs/calibration+<judge>.json and return it. Ctrl-C raises Interrupted, saying what was kept."""
    from whichstage.project import config as projects
    from whichstage.providers import build as providers
    from whichstage.providers.preflight import preflight

    if project.calibration is None:
        raise InputError(f"{projects.CONFIG}: calibration: not set: name the labelled cases' file, "
                         "calibration = \"calibration-cases.json\"")
    folder, cases = project.folder, load_calibration(project)
    if live:
        judge = judge_name()
        preflight([judge])
    else:
        judge = recorded_judge(folder)
    tape = Cassette(recording_path(folder, judge), {"judge": judge}, Mode.of(live, rerecord),
                    check=lambda entry, value: verdict_problem(value))
    try:
        progress = Progress(len(cases["cases"]) * REPEATS, "calibration", quiet or not live)
        for note in tape.notes:
            progress.log(note)
        try:
            result = calibrate(cases, tape, locked_once(lambda: providers.judge_model(judge)), concurrency=concurrency,
                               progress=progress, own=project.criteria, threshold_of=project.threshold_of)
        finally:
            progress.close()
        if tape.live and not result["errors"]:
            tape.save()
        elif tape.live:
            tape.incomplete(f"{cases_text(result['errors'])} errored")
        write_if_changed(folder / "runs" / f"{tape.path.stem}.json", json.dumps(result, indent=2) + "\n")
    except KeyboardInterrupt:
        raise Interrupted(f"{tape.end()} new scores are kept in {shown(tape.journal)}") from None
    finally:
        tape.close()
    return result


def main(argv: Optional[list[str]] = None) -> int:
    prog = console.name("calibrate.py")  # how the user called this command, for its messages
    parser = argparse.ArgumentParser(prog=prog, description=" ".join(__doc__.split("\n\n")[0].split()),
                                     epilog="The judge is DOCS_JUDGE (rules for models as in evaluate.py --help). "
                                            "Exit codes: 0 the judge is calibrated, 1 on a gating metric "
                                            f"agreement below {AGREEMENT:.0%}, kappa below {KAPPA} or fewer than "
                                            f"{MIN_ROWS} good or defect rows, 2 bad input or stale recording, "
                                            "3 incomplete, 130 interrupted, 143 terminated (SIGTERM); an interrupted "
                                            "run keeps every score it paid for.")
    parser.add_argument("--project", metavar="DIR", help="the project folder, with its evals.toml (default: the "
                        "current folder)")
    add_live_options(parser, "judge calls")
    args = parser.parse_args(argv)
    check_live_options(parser, args)
    printable_stdout()
    from whichstage.project import config as projects

    terminated = SigtermAsInterrupt()
    try:
        result = run_calibration(projects.load(Path(args.project or ".")), args.live, args.rerecord,
                                 args.concurrency, args.quiet)
    except (WhichstageError, OSError, KeyboardInterrupt) as e:
        return ended(prog, e, terminated=bool(terminated), again="; run --live again to finish")
    finally:
        terminated.restore()
    stopped = console.write_stdout(table(result), command=prog)
    if stopped is not None:
        return stopped
    if result["errors"]:
        print(f"{prog}: incomplete: {cases_text(result['errors'])} errored; run --live again", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 1 if result["gate_failed"] else 0


"""Is a judge calibrated for a project? Read from the calibration report calibrate.py wrote for it
(runs/calibration+<judge>.json), checked against the project's labelled cases and the judge as it is now.

`status(folder, judge)` never raises for a missing, stale or broken report: it says why the judge is not
calibrated. The figures are recomputed from the report's rows (whichstage/scoring/agreement.py), so the gate is the one
calibrate.py applies today, not the one that wrote the file.
"""
from pathlib import Path
from typing import Callable

from whichstage._util.files import RecordingError, read_json, shown
from whichstage.scoring import agreement as agree
from whichstage.judging.metrics import gating_metrics, stage_of
from whichstage.run.files import CALIBRATION_PREFIX, file_part
from whichstage.model.stages import THRESHOLD
from whichstage.model.dicts import CalibrationSetDict, ReportDict

NOT_RECORDED = "judge not calibrated: no calibration recording for it"


def report_path(folder: Path, judge: str) -> Path:
    return Path(folder) / "runs" / f"{CALIBRATION_PREFIX}{file_part(judge)}.json"


def status(folder: Path, judge: str) -> dict:
    """{"calibrated": bool, "metrics": {metric: {"agreement", "kappa", "calibrated"}}, "why": "..."} for each
    gating metric, a metric's "calibrated" true only when it passes the whole gate (enough rows of each label,
    agreement and kappa); or {"calibrated": False, "why": ...} alone when there is no usable report."""
    from whichstage.project import config as projects
    from whichstage.model.errors import InputError

    path = report_path(folder, judge)
    if not path.is_file():
        return {"calibrated": False, "why": NOT_RECORDED}
    try:
        project, unreadable = projects.load(Path(folder)), ""
    except InputError as e:
        project, unreadable = None, str(e)
    try:
        report = read_json(path)
        stale = staleness(project, judge, report) if project else unreadable
        rows = report["rows"]
        pairs = [(r["metric"], r["verdict"], r["label"]) for r in rows]
        gating = gating_metrics(c.name for c in (project.criteria if project else []))
        tables = agree.tables(pairs, gating)
    except (RecordingError, KeyError, TypeError, ValueError, AttributeError) as e:
        reason = str(e) if isinstance(e, RecordingError) else f"{shown(path)}: not a calibration report"
        return {"calibrated": False, "why": f"judge not calibrated: {reason}"}
    if stale:
        return {"calibrated": False, "why": f"judge not calibrated: {stale}; run calibrate.py --live"}
    metrics, failing = {}, []
    for metric in gating:
        reasons = agree.failures(tables[metric])
        metrics[metric] = {"agreement": agree.agreement(tables[metric]), "kappa": agree.kappa(tables[metric]),
                           "calibrated": not reasons}
        if reasons:
            failing.append(f"{metric}: {', '.join(reasons)}")
    errored = sum(v == "error" for _, v, _ in pairs)
    if errored:
        failing.insert(0, f"{errored} calibration case{'s' if errored != 1 else ''} errored")
    if failing:
        return {"calibrated": False, "metrics": metrics, "why": f"judge not calibrated: {'; '.join(failing)}"}
    return {"calibrated": True, "metrics": metrics,
            "why": f"judge calibrated: on every gating metric agreement >= {agree.AGREEMENT:.0%}, "
                   f"kappa >= {agree.KAPPA} and at least {agree.MIN_ROWS} good and {agree.MIN_ROWS} defect rows"}


def own_thresholds(cases: CalibrationSetDict, threshold_of: Callable[[str], float]) -> dict[str, float]:
    """The labelled metrics the project judges against a threshold other than THRESHOLD (Project.threshold_of
    of each one's stage): calibration measures agreement where the project gates."""
    metrics = dict.fromkeys(case["metric"] for case in cases["cases"])
    return {m: t for m in metrics if (t := threshold_of(stage_of(m))) != THRESHOLD}


def staleness(project, judge: str, report: ReportDict) -> str:
    """Why the report no longer describes this judge on this project's (a whichstage.project.config.Project) labels; ''
    when it still does."""
    from whichstage.model.errors import InputError
    from whichstage.project.validate import read
    from whichstage.run.entries import judge_identity, sha

    key = report["key"]
    identity = judge_identity(judge)
    if any(key.get(field) != value for field, value in identity.items()):
        return "its calibration report was made with another judge or another version of its code"
    if project.calibration is None:
        return "the project names no calibration cases (evals.toml: calibration)"
    try:
        cases = read(project.path(project.calibration, "calibration"), project.calibration)
    except InputError as e:
        return str(e)
    if sha(cases) != key.get("cases_sha"):
        return f"{project.calibration} changed since its calibration report was written"
    from whichstage.project import criteria

    if criteria.key_part(project.criteria).get("criteria") != key.get("criteria"):
        return "the criteria in evals.toml changed since its calibration report was written"
    if own_thresholds(cases, project.threshold_of) != key.get("thresholds", {}):
        return "the thresholds in evals.toml changed since its calibration report was written"
    return ""

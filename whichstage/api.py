"""The Python API `import whichstage` offers (docs/api.md): the commands' own code, returning data instead of
printing it. Reports are returned, not written to runs/; recordings are read and written as by the commands.
A report is a plain dict that whichstage.Report describes (`Report.model_validate(report)` checks one)."""
from pathlib import Path
from typing import Optional, Union, cast

from whichstage.model.dicts import ReportDict
from whichstage.run.inputs import Loaded
from whichstage.calls.pool import DEFAULT_CONCURRENCY

Folder = Union[str, Path]


def load_project(folder: Folder = ".") -> Loaded:
    """The project in `folder` (its evals.toml) with its cases, pages and records read and checked; bad input
    raises whichstage.project.validate.InputError, one line naming the file and the field."""
    from whichstage.project import config as project
    from whichstage.run.inputs import load_inputs

    return load_inputs(project.load(Path(folder)))


def loaded(project_or_folder: Union[Loaded, Folder]) -> Loaded:
    """A project as load_project returns it, from itself or its folder."""
    return project_or_folder if isinstance(project_or_folder, Loaded) else load_project(project_or_folder)


def replay(project_or_folder: Union[Loaded, Folder] = ".", *, split: str = "dev",
           model: Optional[str] = None) -> list[ReportDict]:
    """The report of `split` ("dev", "holdout" or "all") of every recorded run (of `model` alone if given),
    offline; a stale recording raises a RecordingError (a WhichstageError) saying what changed."""
    from whichstage.run import pipeline

    return pipeline.replay(loaded(project_or_folder), model=model, split=split)


def record(project_or_folder: Union[Loaded, Folder] = ".", *, split: str = "dev", model: Optional[str] = None,
           concurrency: int = DEFAULT_CONCURRENCY, rerecord: bool = False, quiet: bool = True) -> ReportDict:
    """`--live`: call the models (`model` or DOCS_MODEL, DOCS_EMBEDDER, DOCS_JUDGE) for every entry missing or
    stale, save the recording once every call succeeded, and return the report of `split`."""
    from whichstage.run import pipeline
    from whichstage.providers.names import chat_model_name

    from whichstage.run.options import RunOptions

    options = RunOptions(model or chat_model_name(), concurrency=concurrency, rerecord=rerecord, quiet=quiet,
                         split=split)
    report, _, _ = pipeline.record(loaded(project_or_folder), options)
    return report


def compare_runs(a: Union[dict, Folder], b: Union[dict, Folder]) -> dict:
    """What `whichstage compare A B` prints, as data: the cases B fixed, broke or moved, and the exact McNemar
    tests overall and per stage. `a` and `b` are reports (as replay returns them) or their JSON files."""
    from whichstage.analysis import compare

    reports = [cast(ReportDict, given) if isinstance(given, dict) else compare.load_report(str(given))
               for given in (a, b)]
    return compare.comparison(*reports)


def calibrate_judge(project_or_folder: Union[Loaded, Folder] = ".", *, live: bool = False,
                    concurrency: int = DEFAULT_CONCURRENCY, rerecord: bool = False, quiet: bool = True) -> dict:
    """`whichstage calibrate`: the judge's agreement with the project's hand-labelled cases, per metric, as
    written to runs/calibration+<judge>.json (`live`: judge what is missing or stale first)."""
    from whichstage.analysis import calibration as calibrate
    from whichstage.project import config as project

    found = project_or_folder.project if isinstance(project_or_folder, Loaded) else project.load(
        Path(project_or_folder))
    return calibrate.run_calibration(found, live, rerecord, concurrency, quiet)


def export_results(reports: Union[dict, list[dict]], path: Folder, mode: str = "otel") -> None:
    """`whichstage run --export MODE FILE`: write the reports' verdicts (a report as replay or record returns it, or
    a list of them) to `path` as `mode`: "otel" (gen_ai.evaluation.result events, OTLP JSON logs), "jsonl" or
    "csv" (one row per case and stage); atomically. A bad mode raises InputError naming the valid ones."""
    from whichstage.render.export import export

    export(cast(list[ReportDict], [reports] if isinstance(reports, dict) else list(reports)), mode, Path(path))


def _project(project_or_folder: Union[Loaded, Folder]):
    from whichstage.project import config as project

    return project_or_folder.project if isinstance(project_or_folder, Loaded) else project.load(Path(project_or_folder))


def export_cases(project_or_folder: Union[Loaded, Folder], path: Folder, *, format: Optional[str] = None,
                 split: str = "all") -> int:
    """`whichstage cases export FILE`: the case set as DeepEval goldens or Ragas samples ("deepeval-jsonl",
    "deepeval-csv", "ragas-jsonl", "ragas-csv"; default DeepEval's, CSV for a .csv file); how many cases."""
    from whichstage.run import case_sets

    return case_sets.export_cases(_project(project_or_folder), Path(path), format, split)


def import_cases(project_or_folder: Union[Loaded, Folder], path: Folder, *, format: Optional[str] = None,
                 replace: bool = False) -> dict:
    """`whichstage cases import FILE`: a peer's cases into the project's cases file (rows without a reference
    into its drafts file), checked whole first; the ids added, updated, unchanged and drafted."""
    from whichstage.run import case_sets

    done = case_sets.import_cases(_project(project_or_folder), Path(path), format, replace)
    return {"added": done.added, "updated": done.updated, "unchanged": done.unchanged, "drafts": done.drafts,
            "unmatched_context": done.unmatched, "written": [str(p) for p in done.written]}


def import_traces(file: Folder, *, project: Union[Loaded, Folder] = ".", format: Optional[str] = None,
                  drafts: Optional[Folder] = None):
    """`whichstage import FILE`: record the traces of `file` as the project's recording of model `imported`,
    the unmatched ones as draft cases; returns what it did (whichstage.traces.importing.Summary). `format` is
    one of otlp, openinference, langsmith, jsonl (None: told from the file)."""
    from whichstage.traces import importing

    return importing.import_file(loaded(project), Path(file), format, None if drafts is None else Path(drafts))

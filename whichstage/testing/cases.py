"""A project's replayed cases as pytest parameters, and the assertion that fails one at its first failing stage.

A project is replayed once per test session, offline, from its recordings (as `whichstage run` replays it,
reading the same DOCS_* variables); a stale or missing recording or bad input fails the collection with the
harness's one-line message, so a suite never passes on what it could not replay.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import pytest

from whichstage.model.dicts import ReportDict

_REPLAYED: dict[tuple, Union[list["CaseResult"], str]] = {}  # a replay's results, or its refusal; per session


@dataclass(frozen=True)
class CaseResult:
    """One case of one recorded run: its first failing stage (None when it passes every stage) and why."""
    id: str
    run: str
    question: str
    first_failure: Optional[str]
    reason: Optional[str]

    @property
    def passed(self) -> bool:
        return self.first_failure is None


def project_cases(project: Union[str, Path] = ".", model: Optional[str] = None,
                  split: str = "all") -> list:
    """One pytest parameter per case of each recorded run of the project in `project` (relative to the working
    folder, as the CLI reads --project), its id the case's id (with the run's models when there are several
    runs). `model` and `split` are `whichstage run`'s --model and --split."""
    results = replayed(Path(project), model, split)
    several = len({r.run for r in results}) > 1
    return [pytest.param(r, id=f"{r.id}@{r.run.split('+', 1)[1]}" if several else r.id) for r in results]


def assert_case_passes(result: CaseResult) -> None:
    """Fail the test with '<case id>: first failing stage <stage>: <reason>' unless the case passed."""
    if not result.passed:
        pytest.fail(f"{result.id}: first failing stage {result.first_failure}: {result.reason}", pytrace=False)


def replayed(project: Path, model: Optional[str], split: str) -> list[CaseResult]:
    """The project's replayed cases, replayed once per session; a refusal fails the collection in one line."""
    key = (project.resolve(), model, split)
    if key not in _REPLAYED:
        _REPLAYED[key] = _replay(project, model, split)
    outcome = _REPLAYED[key]
    if isinstance(outcome, str):
        pytest.fail(outcome, pytrace=False)
    return outcome


def forget() -> None:
    """Drop every cached replay: the plugin calls it when a session ends."""
    _REPLAYED.clear()


def _replay(project: Path, model: Optional[str], split: str) -> Union[list[CaseResult], str]:
    from whichstage._util.files import RecordingError
    from whichstage._util.console import visible
    from whichstage.model.errors import InputError
    from whichstage.run.files import run_name
    from whichstage.render.row_view import failure_reason

    try:
        reports = _reports(project, model, split)
    except (InputError, RecordingError) as e:
        return visible(f"whichstage: {e}")
    results = []
    for report in reports:
        key = report["key"]
        run = run_name(key["cases"].rsplit("@", 1)[0], key["model"], key["embedder"], key["judge"])
        results += [CaseResult(row["id"], run, row["question"], row["first_failure"],
                               failure_reason(row) if row["first_failure"] else None) for row in report["rows"]]
    return results


def _reports(project: Path, model: Optional[str], split: str) -> list[ReportDict]:
    """Each recorded run's report, replayed as `whichstage run` replays it."""
    from whichstage.api import replay

    return replay(project, split=split, model=model)

"""Shared by the tests: a copy of the project to run the CLI in, so no test touches the real recordings."""
import shutil
from pathlib import Path

import pytest

PROJECT = Path(__file__).parent
COPIED = ("*.py", "*.json", "recordings/*.json", "runs/*", "baselines/*.json")


def copy_project(into: Path) -> Path:
    """The project's code, inputs, recordings, reports and baselines, without its tests."""
    for pattern in COPIED:
        for src in PROJECT.glob(pattern):
            if src.name.startswith("test_") or src.name == "conftest.py":
                continue
            dest = into / src.relative_to(PROJECT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest)
    return into


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)


OFFLINE = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}


@pytest.fixture
def live_project(project: Path, monkeypatch) -> Path:
    """evaluate.py, in this process, pointed at a copy of the project, with the offline backends selected
    and retries that cost no time."""
    import evaluate
    import live_calls

    monkeypatch.setattr(evaluate, "HERE", project)
    monkeypatch.setattr(live_calls, "sleep", lambda seconds: None)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    return project

"""The trace tests' fixtures and helpers (not a conftest.py: the tests import the root conftest by that name). The
trace tests' project: one made by `whichstage init`, its agent run on its cases once per session under each
LangChain instrumentor (spans written as OTLP JSON) and under a LangSmith-shaped tracer, and recorded by the
harness itself with the offline backends, the rows every import is held to."""
import contextvars
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from otlp_files import finished, instrumented, write_otlp  # noqa: E402

OFFLINE = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
ROOT = Path(__file__).parents[2]
IMPORTED = "acme-notes+imported+hash+lexical"  # the imported recording's name, with the offline judge


def agent_runs(folder: Path, questions: list[str], config: list[dict] | None = None) -> None:
    """Run the project's agent (offline models) once per question, as the harness does (agent/capture.py)."""
    import whichstage
    from whichstage.agent import factory
    from whichstage.agent.capture import run
    from whichstage.run.entries import Inputs

    inputs = Inputs(whichstage.load_project(folder), "rules", "hash", "lexical")
    agent = factory.builder(inputs, "rules", "hash")(None)
    for i, question in enumerate(questions):
        # each run in a context of its own, as a server's request is: an instrumentor may leave a span current
        # (OpenLLMetry's does), which would make the next run's root its child
        contextvars.Context().run(run, agent.with_config(config[i]) if config and config[i] else agent, question)


def langsmith_runs(folder: Path, questions: list[str]) -> list[dict]:
    """The runs LangChain's tracer hands LangSmith (langchain_core's Run, as JSON), for each question's run."""
    from langchain_core.tracers.base import BaseTracer

    import whichstage
    from whichstage.agent import factory
    from whichstage.agent.capture import run
    from whichstage.run.entries import Inputs

    class Collect(BaseTracer):
        def __init__(self):
            super().__init__()
            self.runs: list = []

        def _persist_run(self, found) -> None:
            self.runs.append(found)

    tracer = Collect()
    inputs = Inputs(whichstage.load_project(folder), "rules", "hash", "lexical")
    agent = factory.builder(inputs, "rules", "hash")(None).with_config({"callbacks": [tracer]})
    for question in questions:
        run(agent, question)
    def flat(found) -> list[dict]:  # a flat list of runs, each with its parent_run_id, as LangSmith lists them
        return [json.loads(found.model_dump_json(exclude={"child_runs"})),
                *(run for child in found.child_runs for run in flat(child))]

    return [run for root in tracer.runs for run in flat(root)]


MADE: dict = {}  # made's value, once per process: each test module imports the fixture, and gets its own


@pytest.fixture(scope="session")
def made(tmp_path_factory) -> dict:
    """{"project": an init project recorded by the harness, "openinference"/"openllmetry": their OTLP files,
    "langsmith": a LangSmith run export (JSON), "own": the harness's own report rows}."""
    if not MADE:
        MADE.update(make(tmp_path_factory))
    return MADE


def make(tmp_path_factory) -> dict:
    from whichstage import cli

    root = tmp_path_factory.mktemp("traces")
    folder = root / "notes"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert cli.main(["init", str(folder)]) == 0
        questions = [c["question"] for c in json.loads((folder / "cases.json").read_text())["cases"]]
        files = {}
        exporter, uninstrument = instrumented("openinference")
        try:
            agent_runs(folder, questions)
        finally:
            uninstrument()
        files["openinference"] = write_otlp(root / "openinference.json", finished(exporter, len(questions)))
        # OpenLLMetry's uninstrument leaves its callback handler in LangChain, whose spans would then parent
        # every later run's: it runs in a process of its own
        files["openllmetry"] = root / "openllmetry.json"
        subprocess.run([sys.executable, str(Path(__file__).parent / "otlp_files.py"), "openllmetry", str(folder),
                        str(files["openllmetry"])], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        files["langsmith"] = root / "langsmith.json"
        files["langsmith"].write_text(json.dumps(langsmith_runs(folder, questions)))
        assert cli.main(["run", "--project", str(folder), "--live", "--quiet"]) == 0
        import whichstage

        own = whichstage.replay(folder, model="rules", split="all")[0]["rows"]
    return {"project": folder, "own": own, **files}


@pytest.fixture
def notes(made, tmp_path, monkeypatch, capsys) -> Path:
    """A copy of the made project without its own recording, run from its folder with the offline backends."""
    folder = tmp_path / "notes"
    shutil.copytree(made["project"], folder, ignore=shutil.ignore_patterns("recordings", "runs"))
    monkeypatch.chdir(folder)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    return folder


def whichstage_cli(*argv: str) -> int:
    from whichstage import cli

    return cli.main(list(argv))


def imported_rows(folder: Path) -> dict[str, dict]:
    """The replayed rows of the imported recording, by case id."""
    import whichstage

    return {r["id"]: r for r in whichstage.replay(folder, model="imported", split="all")[0]["rows"]}


SAME = ("calls", "tool_calls", "retrieved", "searches", "searched", "answer", "tools", "retrieval", "behaviour",
        "first_failure", "usage")


def scored(row: dict) -> dict:
    """What a row says of a run: its calls, pages, answer, each stage's verdict (its score and reason), its
    first failure, its tokens."""
    judged = {stage: (v["score"], v.get("reason")) for stage, v in row["judged"].items()}
    return {**{k: row[k] for k in SAME}, "judged": judged}


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]

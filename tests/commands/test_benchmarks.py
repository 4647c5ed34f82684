"""The benchmarks' own helpers (benchmarks/), on a project as a user's checkout holds it."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def benchmark(name: str):
    """The module benchmarks/<name>.py, loaded from its file (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_replay_cpu_copies_a_project_whose_runs_hold_a_history(tmp_path):
    root, into = tmp_path / "root", tmp_path / "into"
    (root / "runs" / "history" / "v1").mkdir(parents=True)
    (root / "runs" / "history" / "v1" / "report.json").write_text("{}")
    (root / "runs" / "report.json").write_text("[]")
    benchmark("replay_cpu").copy_project(into, root)
    assert (into / "runs" / "history" / "v1" / "report.json").read_text() == "{}"

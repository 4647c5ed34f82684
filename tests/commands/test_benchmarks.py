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


def test_the_suite_cpu_summary_sums_each_files_tests_across_workers(tmp_path):
    (tmp_path / "1.jsonl").write_text('{"test": "tests/a.py::t1", "cpu_s": 1.5, "wall_s": 2.0}\n'
                                      '{"test": "tests/b.py::t1", "cpu_s": 0.25, "wall_s": 0.5}\n')
    (tmp_path / "2.jsonl").write_text('{"test": "tests/a.py::t2[x]", "cpu_s": 2.0, "wall_s": 3.0}\n')
    lines = benchmark("suite_cpu").summary(tmp_path).splitlines()
    assert [line.split() for line in lines[1:]] == [
        ["3.5", "5.0", "2", "tests/a.py"], ["0.2", "0.5", "1", "tests/b.py"], ["3.8", "5.5", "3", "all"]]

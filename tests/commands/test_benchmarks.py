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


def test_the_planted_defects_edit_a_copy_of_each_bundled_project_and_keep_it_loadable(tmp_path):
    import json

    bench = benchmark("diagnosis")
    for project in bench.PROJECTS:
        copy = tmp_path / project.name
        project.copy(copy)
        assert not (copy / "recordings").exists()
        assert {p.name for p in (copy / "runs").iterdir()} == {p.name for p in project.source.glob("runs/calibration+*")}
        project.drop_best_hit(copy)  # refuses when the agent's search is no longer the code it edits
        assert project.dropped in (copy / project.agent_file).read_text(encoding="utf-8")
        page = project.sole_pages()[0]
        project.blank_page(copy, page)
        if page.endswith(".md"):
            assert (copy / page).read_text(encoding="utf-8").startswith("# ")
        else:
            (blank,) = [p for p in json.loads((copy / "docs.json").read_text(encoding="utf-8")) if p["id"] == page]
            assert blank["text"] == bench.BLANK and "planted" not in blank
        project.shorten_answers(copy)
        assert 'agent = "planted_answer:factory"' in (copy / "evals.toml").read_text(encoding="utf-8")
        assert "def shorter(" in (copy / "planted_answer.py").read_text(encoding="utf-8")
    assert bench.shorter("One. Two? Three!") == "One. Two?" and bench.shorter("Only one.") == "Only one."

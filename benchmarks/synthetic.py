"""A copy of the bundled example project with a case set grown to N cases, for the benchmarks (never for
tests' timings). The harness stays in the repository and runs it with --project."""
import copy
import json
import shutil
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
PROJECT_FILES = ("evals.toml", "assistant.py", "docs.json", "issues.json", "calibration-cases.json")


def grown_project(into: Path, n: int) -> Path:
    """The project's agent and inputs in `into`, with cases.json holding n cases: the bundled ones, then
    variants of them whose questions differ by a trailing note, so each is a case of its own."""
    for name in PROJECT_FILES:
        shutil.copy(PROJECT / name, into / name)
    cases = json.loads((PROJECT / "cases.json").read_text(encoding="utf-8"))
    bundled = cases["cases"]
    grown = []
    for i in range(n):
        case = copy.deepcopy(bundled[i % len(bundled)])
        if i >= len(bundled):
            case["id"] = f"{case['id']}-{i}"
            case["question"] += f" (asked by reader {i})"
        grown.append(case)
    cases["cases"] = grown
    (into / "cases.json").write_text(json.dumps(cases, indent=2), encoding="utf-8")
    (into / "recordings").mkdir(exist_ok=True)
    return into

"""The README's pytest entry, timed as a user runs it: in a temporary folder, a project written by `whichstage
init` and recorded offline, the README's test file, then `python -m pytest -q` R times with the README's
pytest configuration and R times without it, warm and as the first run after an install (pytest's rewritten
bytecode deleted: it rewrites the asserts of every module of an autoloaded plugin's package, and caches them).
Run it with the python of a venv whichstage is installed in (not this clone's), e.g. one made as .ci/outside
makes it: median wall and CPU (user + system) of each.

    VENV/bin/python benchmarks/pytest_entry.py [--rounds R]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
OFFLINE = {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
# One fresh process per measurement, so RUSAGE_CHILDREN is that run's alone.
MEASURE = ("import resource, subprocess, sys, time\n"
           "start = time.perf_counter()\n"
           "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
           "took = time.perf_counter() - start\n"
           "used = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(done.returncode, took, used.ru_utime + used.ru_stime, done.stdout.strip().splitlines()[-1])")
# What pytest's assertion rewriting caches beside each module it rewrote: gone, as in a venv just installed.
REWRITTEN = "**/__pycache__/*-pytest-*.pyc"


def readme_block(language: str, holding: str) -> str:
    """The README's first fenced `language` block that holds `holding`."""
    blocks = re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), re.S | re.M)
    return next(b for b in blocks if holding in b)


def suite(folder: Path) -> None:
    """The project `init` writes, recorded with the offline backends, and the README's test file beside it."""
    subprocess.run([sys.executable, "-m", "whichstage", "init", "evals"], cwd=folder, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "whichstage", "run", "--live", "--quiet"], cwd=folder / "evals",
                   env={**os.environ, **OFFLINE}, check=True, capture_output=True)
    (folder / "tests").mkdir()
    (folder / "tests" / "test_evals.py").write_text(readme_block("python", "project_cases"))


def measured(folder: Path, configured: bool, cold: bool) -> list:
    config = folder / "pyproject.toml"
    if configured:
        config.write_text(readme_block("toml", "[tool.pytest.ini_options]"))
    else:
        config.unlink(missing_ok=True)
    if cold:
        for cached in Path(sysconfig.get_paths()["purelib"]).glob(REWRITTEN):
            cached.unlink()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}
    out = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "pytest", "-q"], cwd=folder,
                         env=env, capture_output=True, text=True, check=True).stdout
    code, took, cpu, last = out.split(maxsplit=3)
    return [int(code), float(took), float(cpu), last.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        suite(folder)
        variants = [(configured, cold) for cold in (False, True) for configured in (False, True)]
        measured(folder, False, False)  # a first run writes the bytecode a warm run reads
        runs: dict[tuple, list] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for variant in variants:
                runs[variant].append(measured(folder, *variant))
    for (configured, cold), found in runs.items():
        label = f"{'README config' if configured else 'no config':<13} {'first run' if cold else 'warm':<9}"
        print(f"{label} exit {sorted({m[0] for m in found})} wall median {statistics.median(m[1] for m in found):.2f} s "
              f"cpu median {statistics.median(m[2] for m in found):.2f} s  ({found[-1][3]})")


if __name__ == "__main__":
    main()

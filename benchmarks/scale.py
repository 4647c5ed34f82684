"""A big case set on one machine: `--live` from nothing, `--live` with nothing to do, a replay, and a replay
of the recording unstamped (its stamp in .cache/checked deleted, so every entry is checked again: a harness
before 2026-12-01 stamped; today's checks every entry on every replay), each with
its wall time, CPU time and peak memory (the maximum resident set of that one process), on the bundled project grown
to N cases with the offline backends at the default concurrency.

    python benchmarks/scale.py [N ...] [--harness DIR ...] [--repeat R]

--harness runs another checkout's evaluate.py on the same grown project (to measure before and after a
change: `git worktree add /tmp/before REV`, then `--harness /tmp/before --harness .`); each harness records
its own copy once, then the other three runs are repeated R times, the harnesses taking turns (so a busy
spell on a shared machine falls on each alike), and the best of the R is reported. Children write and read
bytecode, as Python does by default (PYTHONDONTWRITEBYTECODE is dropped), so the first run compiles the
harness and the others do not.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import grown_project  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# One fresh process per measurement, so ru_maxrss of its children is that run's alone.
MEASURE = ("import resource, subprocess, sys, time\n"
           "start = time.perf_counter()\n"
           "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
           "took = time.perf_counter() - start\n"
           "used = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(code, round(took, 2), round(used.ru_utime + used.ru_stime, 2), used.ru_maxrss // 1024)")


def measured(harness: Path, project: Path, *args: str) -> tuple[int, float, float, int]:
    """(exit code, wall seconds, CPU seconds (user+sys), peak MB) of `evaluate.py --project PROJECT ARGS`."""
    env = {**os.environ, "DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
    env.pop("DOCS_OFFLINE_LATENCY_MS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as Python does by default: the first run compiles, the rest read .pyc
    command = [sys.executable, "-c", MEASURE, sys.executable, str(harness / "evaluate.py"), "--project", str(project),
               *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=harness, check=True)
    code, took, cpu, mb = done.stdout.split()
    return int(code), float(took), float(cpu), int(mb)


REPEATED = (("--live, nothing to do", ["--live", "--quiet"]), ("replay", []), ("replay, unstamped", []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000])
    parser.add_argument("--harness", type=Path, action="append", help="a checkout whose evaluate.py runs "
                        "(repeatable; default this one)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each measurement but the first recording")
    args = parser.parse_args()
    harnesses = [h.resolve() for h in args.harness or [ROOT]]
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; harness " + ", ".join(map(str, harnesses)))
    print(f"\n{'cases':>7}  {'harness':<28}{'run':<24}{'exit':>5}{'wall s':>9}{'CPU s':>8}{'peak MB':>9}")
    best: dict[tuple, tuple[float, float, int]] = {}

    def run(n: int, harness: Path, project: Path, label: str, extra: list[str]) -> None:
        if label == "replay, unstamped":
            shutil.rmtree(project / ".cache" / "checked", ignore_errors=True)
        code, took, cpu, mb = measured(harness, project, *extra)
        print(f"{n:>7}  {str(harness)[-28:]:<28}{label:<24}{code:>5}{took:>9.2f}{cpu:>8.2f}{mb:>9}", flush=True)
        best[n, harness, label] = tuple(map(min, zip(best.get((n, harness, label), (took, cpu, mb)), (took, cpu, mb))))

    for n in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            projects = {}
            for i, harness in enumerate(harnesses):
                (Path(folder) / str(i)).mkdir()
                projects[harness] = grown_project(Path(folder) / str(i), n)
            for harness, project in projects.items():
                run(n, harness, project, "--live from nothing", ["--live", "--quiet"])
            for _ in range(args.repeat):
                for harness, project in projects.items():
                    for label, extra in REPEATED:
                        run(n, harness, project, label, extra)
    if args.repeat > 1:
        print(f"\nbest of {args.repeat} (the recording: of 1)\n")
        for (n, harness, label), (took, cpu, mb) in best.items():
            print(f"{n:>7}  {str(harness)[-28:]:<28}{label:<24}{took:>14.2f}{cpu:>8.2f}{mb:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

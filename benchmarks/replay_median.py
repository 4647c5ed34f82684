"""A replay (or `--live` with nothing to do) of a big grown project by several harnesses in turn, R rounds:
the median CPU time (user+sys of the child), wall time and peak memory of each. Each harness replays a project
it recorded itself (grown to N cases by synthetic.py, recorded once with the offline backends and kept in
--projects, so later invocations skip the recording).

    python benchmarks/replay_median.py N --harness DIR [--harness DIR ...] [--rounds R] [--projects DIR] [--live]
"""
import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import grown_project  # noqa: E402

ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
# One fresh process per measurement, so RUSAGE_CHILDREN is that run's alone.
MEASURE = ("import resource, subprocess, sys, time\n"
           "start = time.perf_counter()\n"
           "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
           "took = time.perf_counter() - start\n"
           "used = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(code, took, used.ru_utime + used.ru_stime, used.ru_maxrss // 1024)")


def recorded(harness: Path, n: int, projects: Path, index: int) -> Path:
    """The project of n cases this harness recorded (recorded now if it is not there yet)."""
    project = projects / f"{index}-{harness.name}-{n}"
    if not (project / "recordings").is_dir():
        project.mkdir(parents=True, exist_ok=True)
        grown_project(project, n)
        subprocess.run([sys.executable, str(harness / "evaluate.py"), "--project", str(project), "--live",
                        "--split", "all", "--quiet"], env=ENV, cwd=harness, check=True, stdout=subprocess.DEVNULL)
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--harness", type=Path, action="append", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--projects", type=Path, default=Path("/tmp/replay-median"))
    parser.add_argument("--live", action="store_true", help="--live with nothing to do, not a replay")
    args = parser.parse_args()
    harnesses = [h.resolve() for h in args.harness]
    projects = [recorded(h, args.n, args.projects, i) for i, h in enumerate(harnesses)]
    runs: dict[Path, list[list[float]]] = {h: [] for h in harnesses}
    for _ in range(args.rounds):
        for harness, project in zip(harnesses, projects):
            command = [sys.executable, str(harness / "evaluate.py"), "--project", str(project),
                       *(["--live"] if args.live else [])]
            out = subprocess.run([sys.executable, "-c", MEASURE, *command], env=ENV, cwd=harness,
                                 capture_output=True, text=True, check=True).stdout
            runs[harness].append([float(x) for x in out.split()])
    for harness, measured in runs.items():
        codes = {int(m[0]) for m in measured}
        print(f"{str(harness):<30} exit {codes} cpu median {statistics.median(m[2] for m in measured):.3f} s "
              f"(min {min(m[2] for m in measured):.3f}) wall median {statistics.median(m[1] for m in measured):.3f} s "
              f"peak {max(m[3] for m in measured):.0f} MB")


if __name__ == "__main__":
    main()

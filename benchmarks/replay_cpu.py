"""CPU (user+sys) of a replay against bare Python, side by side: N rounds, each running every command once in
turn (so a busy moment on a shared machine falls on all of them alike), medians reported.

    python benchmarks/replay_cpu.py [N]

It replays a temporary copy of the bundled project (`evaluate.py --project COPY`); `evaluate.py cold`
deletes the copy's .cache first (the input-validation stamps and the agent's tools, which a cold replay
reads by building the agent), `evaluate.py warm` finds the one the previous run left. The children write and read bytecode as Python
does by default (PYTHONDONTWRITEBYTECODE is dropped), so the project's modules are compiled once, not
every run.
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
COPIED = ("evals.toml", "assistant.py", "*.json", "recordings/*.json", "runs/*")
CACHE = ".cache"
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def copy_project(into: Path) -> None:
    """The project's agent, inputs, recordings and reports."""
    for pattern in COPIED:
        for src in PROJECT.glob(pattern):
            dest = into / src.relative_to(PROJECT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest)


def measured(args: list[str], cwd: Path) -> tuple[float, float]:
    """CPU seconds (user+sys) and wall seconds of one run of `python *args`; it must succeed."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    args = [str(PROJECT / "evaluate.py"), "--project", str(cwd)] if args == ["evaluate.py"] else args
    subprocess.run([sys.executable, *args], cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, check=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> int:
    commands = {"python -c pass": ["-c", "pass"], "python -c 'import json'": ["-c", "import json"],
                "evaluate.py cold": ["evaluate.py"], "evaluate.py warm": ["evaluate.py"]}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        copy_project(here)
        measured(["evaluate.py"], here)  # writes the copy's bytecode, as any earlier run would have
        for _ in range(ROUNDS):
            for name, args in commands.items():
                if name.endswith("cold"):
                    shutil.rmtree(here / CACHE, ignore_errors=True)
                c, w = measured(args, here)
                cpu[name].append(c)
                wall[name].append(w)
    bare = statistics.median(cpu["python -c pass"])
    print(f"{ROUNDS} rounds on {os.cpu_count()} cores, {sys.executable}, Python {sys.version.split()[0]}\n")
    print(f"{'command':<26}{'CPU ms (median)':>16}{'min':>8}{'max':>8}{'wall ms':>9}{'x bare':>8}")
    for name in commands:
        median = statistics.median(cpu[name])
        print(f"{name:<26}{1000 * median:>16.0f}{1000 * min(cpu[name]):>8.0f}{1000 * max(cpu[name]):>8.0f}"
              f"{1000 * statistics.median(wall[name]):>9.0f}{median / bare:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

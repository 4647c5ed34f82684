"""CPU (user+sys) of a replay against bare Python, side by side: N rounds, each running every command once in
turn (so a busy moment on a shared machine falls on all of them alike), medians reported.

    python benchmarks/replay_cpu.py [N] [--harness DIR ...]

--harness replays with another checkout's evaluate.py (repeatable, default this one), each on a copy of
its own bundled project, the harnesses taking turns within each round (to measure before and after a
change). It replays a temporary copy of the bundled project (`evaluate.py --project COPY`); `evaluate.py cold`
deletes the copy's .cache first (the input-validation stamps and the agent's tools, which a cold replay
reads by building the agent), `evaluate.py warm` finds the one the previous run left. The children write and read bytecode as Python
does by default (PYTHONDONTWRITEBYTECODE is dropped), so the project's modules are compiled once, not
every run.
"""
import argparse
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
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def copy_project(into: Path, root: Path = PROJECT) -> None:
    """The bundled project's agent, inputs, recordings and reports, as the checkout at `root` holds them."""
    for pattern in COPIED:
        for src in root.glob(pattern):
            dest = into / src.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():  # runs/history/: the labelled runs kept beside the latest
                shutil.copytree(src, dest)
            else:
                shutil.copy(src, dest)


def measured(args: list[str], cwd: Path, harness: Path = PROJECT) -> tuple[float, float]:
    """CPU seconds (user+sys) and wall seconds of one run of `python *args`; it must succeed."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    args = [str(harness / "evaluate.py"), "--project", str(cwd)] if args == ["evaluate.py"] else args
    subprocess.run([sys.executable, *args], cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, check=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=20)
    parser.add_argument("--harness", type=Path, action="append", help="a checkout whose evaluate.py replays "
                        "(repeatable; default this one)")
    args = parser.parse_args()
    harnesses = [h.resolve() for h in args.harness or [PROJECT]]
    commands = {"python -c pass": (["-c", "pass"], None), "python -c 'import json'": (["-c", "import json"], None)}
    for harness in harnesses:
        tag = f" {str(harness)[-24:]}" if len(harnesses) > 1 else ""
        commands |= {f"evaluate.py cold{tag}": (["evaluate.py"], harness),
                     f"evaluate.py warm{tag}": (["evaluate.py"], harness)}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as folder:
        copies = {}
        for i, harness in enumerate(harnesses):
            copies[harness] = here = Path(folder) / str(i)
            copy_project(here, harness)
            measured(["evaluate.py"], here, harness)  # writes the copy's bytecode, as any earlier run would have
        for _ in range(args.rounds):
            for name, (command, harness) in commands.items():
                here = copies[harness or harnesses[0]]
                if " cold" in name:
                    shutil.rmtree(here / CACHE, ignore_errors=True)
                c, w = measured(command, here, harness or PROJECT)
                cpu[name].append(c)
                wall[name].append(w)
    bare = statistics.median(cpu["python -c pass"])
    print(f"{args.rounds} rounds on {os.cpu_count()} cores, {sys.executable}, Python {sys.version.split()[0]}\n")
    width = max(26, *(len(name) + 2 for name in commands))
    print(f"{'command':<{width}}{'CPU ms (median)':>16}{'min':>8}{'max':>8}{'wall ms':>9}{'x bare':>8}")
    for name in commands:
        median = statistics.median(cpu[name])
        print(f"{name:<{width}}{1000 * median:>16.0f}{1000 * min(cpu[name]):>8.0f}{1000 * max(cpu[name]):>8.0f}"
              f"{1000 * statistics.median(wall[name]):>9.0f}{median / bare:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

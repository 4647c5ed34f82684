"""Where the test suite's time goes: a pytest plugin that writes each test's CPU and wall time, and a summary.

    rm -rf /tmp/suite-cpu && SUITE_CPU_DIR=/tmp/suite-cpu PYTHONPATH=benchmarks python -m pytest -q -p suite_cpu
    python benchmarks/suite_cpu.py /tmp/suite-cpu            # per file: CPU s, wall s, tests
    python benchmarks/suite_cpu.py /tmp/suite-cpu --tests    # per test

A test's CPU is its process's user + system time over the test (its set-up and teardown included, and the
threads it ran) plus that of every child process it waited for; each pytest-xdist worker writes its own file.
"""
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Time the test's whole protocol (set-up, call, teardown) around the other plugins' hooks."""
    cpu, wall = _cpu(), time.perf_counter()
    try:
        return (yield)
    finally:
        folder = Path(os.environ.get("SUITE_CPU_DIR", ".cache/suite-cpu"))
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": item.nodeid, "cpu_s": _cpu() - cpu,
                                "wall_s": time.perf_counter() - wall}) + "\n")


def summary(folder: Path, by_test: bool = False) -> str:
    """The rows the plugin wrote under `folder`, summed per file (or one per test), most CPU first."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            key = row["test"] if by_test else row["test"].split("::")[0]
            sums[key][0] += row["cpu_s"]
            sums[key][1] += row["wall_s"]
            sums[key][2] += 1
    total = [sum(v[0] for v in sums.values()), sum(v[1] for v in sums.values()), sum(v[2] for v in sums.values())]
    lines = [f"{'cpu s':>7} {'wall s':>7} {'tests':>5}  {'test' if by_test else 'file'}"]
    lines += [f"{cpu:7.1f} {wall:7.1f} {n:5d}  {key}" for key, (cpu, wall, n) in
              sorted(sums.items(), key=lambda kv: -kv[1][0])]
    lines.append(f"{total[0]:7.1f} {total[1]:7.1f} {total[2]:5d}  all")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python benchmarks/suite_cpu.py DIR [--tests]  (DIR: the plugin's SUITE_CPU_DIR)")
    print(summary(Path(sys.argv[1]), "--tests" in sys.argv[2:]))

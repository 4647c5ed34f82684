"""Benchmark: a `--live` run of the ten cases on the offline backends, with every model call made to wait
DOCS_OFFLINE_LATENCY_MS (default 200 ms) as a network call would, at concurrency 1, 2, 4 and 8.

Run from the project folder: `python benchmarks/live_concurrency.py`. It records into a temporary copy of
the project, so the bundled recordings are not touched. Imports are warmed first and not timed.
"""
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
LEVELS = (1, 2, 4, 8)


def copy_project(into: Path) -> None:
    """The bundled project's agent and inputs (not its recordings); the harness runs it with --project."""
    for pattern in ("evals.toml", "assistant.py", "*.json"):
        for src in PROJECT.glob(pattern):
            shutil.copy(src, into / src.name)


def main() -> int:
    os.environ.setdefault("DOCS_OFFLINE_LATENCY_MS", "200")
    os.environ.update({"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"})
    with tempfile.TemporaryDirectory() as folder:
        copy_project(Path(folder))
        sys.path.insert(0, str(PROJECT))
        from whichstage.cli import run as evaluate
        from whichstage.run.options import RunOptions
        from whichstage.project import config as project
        from whichstage.offline import hash_embedder, lexical_judge, models  # noqa: F401  (warm the imports, so only calls are timed)

        loaded = evaluate.load_inputs(project.load(Path(folder)))
        print(f"injected latency {os.environ['DOCS_OFFLINE_LATENCY_MS']} ms per model call, "
              f"{len(loaded.cases['cases'])} cases\n")
        print(f"{'N':>3}  {'wall':>8}  {'speed-up':>8}  {'target 0.8xN':>12}")
        base = None
        for n in LEVELS:
            start = time.perf_counter()
            report, _, _ = evaluate.record(loaded, RunOptions("rules", concurrency=n, rerecord=True, quiet=True))
            wall = time.perf_counter() - start
            assert not report["summary"]["errors"], "a call failed; the timing would mean nothing"
            base = base or wall
            speedup = base / wall
            print(f"{n:>3}  {wall:>7.2f}s  {speedup:>7.2f}x  {'met' if speedup >= 0.8 * n else 'MISSED':>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

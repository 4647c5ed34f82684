"""Recording cost per case stays flat: offline backends, no injected latency, a fresh recording at three
sizes; the marginal cost per case between 500 and 5,000 cases against that between 50 and 500.

    python benchmarks/recording_cost.py [50 500 5000]
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import grown_project  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SIZES = [int(a) for a in sys.argv[1:]] or [50, 500, 5000]
CHILD = """
import sys, time
from whichstage.offline import hash_embedder, lexical_judge, models  # imports warmed before the clock starts
from whichstage.cli import run as evaluate
from whichstage.project import config as project
from whichstage.run.inputs import load_inputs
from whichstage.run.options import RunOptions

loaded = load_inputs(project.load(sys.argv[1]))
start = time.perf_counter()
report, _, errors = evaluate.record(loaded, RunOptions("rules", concurrency=4, rerecord=True, quiet=True))
took = time.perf_counter() - start
assert not errors
from pathlib import Path
from whichstage.recording.format import read_recording
recorded = sum(len(read_recording(p)["entries"]) for p in (Path(sys.argv[1]) / "recordings").glob("*.json"))
print(f"{took:.3f} {recorded}")
"""


def timed_run(n: int) -> tuple[float, int]:
    """Seconds to record n cases from nothing, and the entries recorded, in a fresh process."""
    with tempfile.TemporaryDirectory() as folder:
        grown_project(Path(folder), n)
        env = {**os.environ, "DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
        env.pop("DOCS_OFFLINE_LATENCY_MS", None)
        done = subprocess.run([sys.executable, "-c", CHILD, folder], cwd=ROOT, env=env, capture_output=True,
                              text=True, check=True)
        took, entries = done.stdout.split()
        return float(took), int(entries)


def main() -> int:
    times = {}
    print(f"{'cases':>6}  {'entries':>8}  {'seconds':>8}  {'ms/case':>8}")
    for n in SIZES:
        took, entries = timed_run(n)
        times[n] = took
        print(f"{n:>6}  {entries:>8}  {took:>8.2f}  {1000 * took / n:>8.1f}")
    sizes = sorted(times)
    marginal = [(b, a, 1000 * (times[b] - times[a]) / (b - a)) for a, b in zip(sizes, sizes[1:])]
    for b, a, ms in marginal:
        print(f"marginal cost per case, {a} -> {b} cases: {ms:.1f} ms")
    if len(marginal) >= 2:
        ratio = marginal[-1][2] / marginal[0][2]
        print(f"ratio of the last to the first: {ratio:.2f} (target at most 1.3): {'met' if ratio <= 1.3 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

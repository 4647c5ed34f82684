"""Pay only for what changed: in a 1,000-case set recorded offline, edit one case's question and record
again. Counts the model calls the second run makes and checks every other entry stays byte-identical,
timing fields included.

    python benchmarks/per_entry_keys.py [1000]
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import grown_project  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
EDITED = 500
# Counts the agent runs and judge metrics a live run makes, then records as `evaluate.py --live` does.
CHILD = """
import sys, time
from whichstage.cli import run as evaluate
from whichstage.agent.factory import capture, judging
calls = {"agent": [], "judge": 0}
run, measure = capture.run, judging.measure
capture.run = lambda agent, q, *history: calls["agent"].append(q) or run(agent, q, *history)
judging.measure = lambda *a: calls.__setitem__("judge", calls["judge"] + 1) or measure(*a)
start = time.perf_counter()
code = evaluate.main(["--project", sys.argv[1], "--live", "--quiet"])
print(f"{code} {time.perf_counter() - start:.2f} {len(calls['agent'])} {calls['judge']}", file=sys.stderr)
"""


def live(folder: str) -> tuple[int, float, int, int]:
    env = {**os.environ, "DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}
    done = subprocess.run([sys.executable, "-c", CHILD, folder], cwd=ROOT, env=env, capture_output=True, text=True)
    code, took, agents, judged = done.stderr.strip().splitlines()[-1].split()
    return int(code), float(took), int(agents), int(judged)


def entries(folder: str) -> dict[str, str]:
    data = json.loads(next(Path(folder, "recordings").glob("*.json")).read_text(encoding="utf-8"))
    return {name: json.dumps(item) for name, item in data["entries"].items()}


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        grown_project(Path(folder), N)
        code, took, agents, judged = live(folder)
        print(f"first recording of {N} cases: {agents} agent runs, {judged} judge metrics, {took:.1f} s (exit {code})")
        before = entries(folder)
        cases = json.loads(Path(folder, "cases.json").read_text(encoding="utf-8"))
        edited = cases["cases"][EDITED]
        edited["question"] = edited["question"].replace("(asked by", "(asked again by")
        Path(folder, "cases.json").write_text(json.dumps(cases, indent=2), encoding="utf-8")
        code, took, agents, judged = live(folder)
        after = entries(folder)
        changed = sorted(n for n in after if after[n] != before.get(n))
        others = [n for n in before if f"/{edited['id']}" not in n]
        same = sum(after.get(n) == before[n] for n in others)
        print(f"after editing case {edited['id']}'s question: {agents} agent run, {judged} judge metrics, "
              f"{took:.1f} s (exit {code})")
        print(f"entries changed: {', '.join(changed)}")
        print(f"other entries byte-identical, timing fields included: {same}/{len(others)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

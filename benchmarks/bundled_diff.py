"""What a change did to the bundled outputs (recordings/, runs/, baselines/, examples/*/ of them) besides the
measured times and the hashes of code: run after re-recording every bundled project with the offline backends.

    python benchmarks/bundled_diff.py [REV]     # against REV (default HEAD); exit 1 and the files when any differ

A refactor leaves every trace, verdict, score and report line as it was: its only differences are times
(`*_s`, `latency`, the reports' 'Latency:' line) and the deps that hash code (`agent code`, `model code`, ..., a report's `agent_sha`),
which change whenever a hashed file's bytes do, its imports included.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ("recordings", "runs", "baselines", "examples/inverter/recordings", "examples/inverter/runs",
           "examples/inverter/baselines")
TIMES = re.compile(r"(_s|^latency|^seconds)$")
CODE_HASHES = {"agent_sha"}  # a report key's hash of the agent's source files
LATENCY = re.compile(r"Latency: [^<\n]*")


def normalised(value):
    """A JSON value without its times, and with every hash of code replaced by a marker."""
    if isinstance(value, dict):
        return {k: "<code>" if k.endswith(" code") or k in CODE_HASHES else normalised(v) for k, v in value.items() if not TIMES.search(k)}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def comparable(path: str, text: str):
    if path.endswith(".json"):
        return normalised(json.loads(text))
    return LATENCY.sub("Latency: <times>", text)


def tracked(rev: str) -> list[str]:
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "--", *OUTPUTS], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    return [p for p in listed if p.endswith((".json", ".md", ".html"))]


def main(argv: list[str]) -> int:
    rev = argv[0] if argv else "HEAD"
    differ = []
    for path in tracked(rev):
        before = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout
        now = (ROOT / path).read_text() if (ROOT / path).exists() else None
        if now is None or comparable(path, before) != comparable(path, now):
            differ.append(path)
    print("\n".join(differ) if differ else f"every bundled output as at {rev}, times and code hashes aside "
                                           f"({len(tracked(rev))} files)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

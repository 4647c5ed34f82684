"""Request-level reuse on the whole bundled example, counted at the Gemini stand-in (the real clients, in this
process): what a fresh recording sends and how much its recording grows by the requests it keeps, then for each
edit of issue 23's table the requests `--live` pays against the minimum (the bodies a full re-record of the
edited project sends that the base recording never sent). The edits and the runs are the acceptance test's
(tests/recording/test_request_reuse.py), here on every case rather than five.

    python benchmarks/request_reuse.py
"""
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conftest import copy_project  # noqa: E402
from tests.recording import test_request_reuse as reuse  # noqa: E402
from whichstage.recording.format import SECTION  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, reuse.logging_standin() as standin:
        folder = Path(tmp)
        base = copy_project(folder / "base")
        code, err, sent = reuse.run(base, standin, "--live")
        assert code == 0, err
        text = (base / "recordings" / f"{reuse.RUN}.json").read_text()
        entries, _, requests = text.partition(SECTION)
        print(f"fresh run: {len(sent)} requests sent, {len(set(sent))} distinct; {err.strip().splitlines()[-1]}")
        print(f"recording: {len(text):,} bytes, of which the requests {len(requests):,} "
              f"({len(requests) / max(1, len(entries)):.0%} of the entries' {len(entries):,})")
        by_kind = Counter()
        for line in requests.splitlines()[:-1]:
            by_kind[json.loads(line.split(": ", 1)[1].rstrip(","))["kind"]] += len(line) + 1
        print("the requests by kind: " + ", ".join(f"{kind} {size:,} bytes" for kind, size in sorted(by_kind.items())))
        print()
        print("| edit | paid | minimum |\n|---|---|---|")
        for name, edit in reuse.EDITS.items():
            project = reuse.copied(base, folder / name.replace(" ", "-"))
            edit(project)
            code, err, paid = reuse.run(project, standin, "--live")
            assert code == 0, err
            everything = reuse.copied(project, folder / (name.replace(" ", "-") + "-all"))
            code, err, full = reuse.run(everything, standin, "--live", "--rerecord")
            assert code == 0, err
            print(f"| {name} | {len(paid)} | {len(set(full) - set(sent))} |")


if __name__ == "__main__":
    main()

"""Check the judge itself: answers and contexts with a known defect must score below the threshold.

Each calibration case is scored REPEATS times; a defect counts as caught only if every score falls below
the threshold. `python calibrate.py` replays recordings/calibration.json; `--live` judges again.
"""
import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Callable, Optional

from cassette import Cassette, RecordingError, write_atomic
from dataset import InputError, load_calibration
from evaluate import THRESHOLD, judge_name, measure, recorded_key, replayed_name, sha

HERE = Path(__file__).parent
REPEATS = 3
RECORDING = HERE / "recordings" / "calibration.json"


def calibration_key(cases: dict, judge: str) -> dict:
    import providers

    return {"cases": f"{cases['name']}@{cases['version']}", "cases_sha": sha(cases), "judge": judge,
            "repeats": REPEATS, "offline": providers.is_offline(judge)}


def calibrate(cases: dict, tape: Cassette, judge: Callable) -> dict:
    """Score every case REPEATS times from the tape; `judge` builds the judge only when a call is needed."""
    rows = []
    for case in cases["cases"]:
        runs = [tape.get(f"{case['id']}/{i}", lambda: measure(case["metric"], judge(), case["question"],
                                                             case["answer"], case["reference"], case["context"]))
                for i in range(REPEATS)]
        scores = [r["score"] for r in runs]
        rows.append({"id": case["id"], "metric": case["metric"], "defect": case["defect"], "scores": scores,
                     "reason": runs[0]["reason"],
                     "caught": all(s is not None and s < THRESHOLD for s in scores)})
    return {"key": tape.key, "threshold": THRESHOLD, "repeats": REPEATS, "rows": rows}


def table(result: dict) -> str:
    lines = []
    for r in result["rows"]:
        scores = "[" + ", ".join("-" if s is None else f"{round(s, 2)}" for s in r["scores"]) + "]"
        lines.append(f"{r['id']:<26}{r['metric']:<21}{scores:<18}  {'caught' if r['caught'] else 'MISSED'}")
    caught = sum(r["caught"] for r in result["rows"])
    lines.append(f"\n{caught}/{len(result['rows'])} known defects caught by judge {result['key']['judge']} "
                 f"(threshold {result['threshold']}, {result['repeats']} scores each).")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="call the judge and rewrite the recording")
    args = parser.parse_args(argv)
    import providers

    try:
        cases = load_calibration(HERE / "calibration-cases.json")
        if args.live:
            judge = judge_name()
            providers.preflight([judge])
        else:
            judge = replayed_name(recorded_key(RECORDING), "judge")
        tape = Cassette(RECORDING, calibration_key(cases, judge), args.live)
        result = calibrate(cases, tape, functools.cache(lambda: providers.judge_model(judge)))
    except (InputError, RecordingError, providers.ProviderError) as e:
        print(f"calibrate.py: {e}", file=sys.stderr)
        return 2
    if args.live:
        tape.save()
    write_atomic(HERE / "runs" / "calibration.json", json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

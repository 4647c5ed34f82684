"""Diff two saved reports case by case: which cases run B fixed, broke, or moved to another failing stage.

`python compare.py runs/A.json runs/B.json` refuses runs measured differently (cases, judge, embedder, k,
faithfulness setting, threshold).
"""
import argparse
import sys
from typing import Optional

from cassette import read_json
from stages import STAGES, failure_reason, stage_results
from stats import rate, rate_text

# A different model under test, prompt or pages is what a comparison is for; these change the measurement.
MEASURED_BY = ("cases", "cases_sha", "judge", "embedder", "k", "strict_faithfulness")
ERROR = "error"


class CompareError(Exception):
    """A report that cannot be compared: unreadable, not a report, or measured differently."""


def load_report(path: str) -> dict:
    """Read one saved report, turning every way it can be unusable into a one-line error naming the file."""
    report = read_json(path, CompareError, path)
    if not (isinstance(report, dict) and isinstance(report.get("key"), dict)
            and isinstance(report.get("threshold"), (int, float)) and isinstance(report.get("rows"), list)
            and all(isinstance(r, dict) and "id" in r and "first_failure" in r for r in report["rows"])):
        raise CompareError(f"{path}: not an evaluation report (expected 'key', 'threshold' and 'rows' with 'id' "
                           f"and 'first_failure')")
    return report


def measurement_differences(key_a: dict, key_b: dict) -> list[str]:
    """'field (A: x, B: y)' for every key field that makes two runs' scores incomparable."""
    shown = lambda value: "none" if value is None else str(value)  # noqa: E731
    return [f"{field} (A: {shown(key_a.get(field))}, B: {shown(key_b.get(field))})"
            for field in (*MEASURED_BY, "threshold") if key_a.get(field) != key_b.get(field)]


def passed(row: dict) -> bool:
    return row["first_failure"] is None


def errored(row: dict) -> bool:
    return row["first_failure"] == ERROR


def reason(row: dict) -> str:
    """Why a row failed: the run's error text, or evaluate's reason for its first failing stage."""
    if errored(row):
        return row.get("error") or "no error text recorded"
    return failure_reason(row)


def diff_cases(rows_a: list[dict], rows_b: list[dict]) -> dict[str, list]:
    """Sort the cases into fixed, broken, changed stage, errored and one-sided, in A's case order."""
    by_id_a, by_id_b = {r["id"]: r for r in rows_a}, {r["id"]: r for r in rows_b}
    both = [cid for cid in by_id_a if cid in by_id_b]
    pairs = [(by_id_a[cid], by_id_b[cid]) for cid in both]
    measured = [(a, b) for a, b in pairs if not errored(a) and not errored(b)]
    return {"fixed": [(a, b) for a, b in measured if not passed(a) and passed(b)],
            "broken": [(a, b) for a, b in measured if passed(a) and not passed(b)],
            "changed": [(a, b) for a, b in measured
                        if not passed(a) and not passed(b) and a["first_failure"] != b["first_failure"]],
            "errored_a": [a for a, _ in pairs if errored(a)],
            "errored_b": [b for _, b in pairs if errored(b)],
            "only_a": [cid for cid in by_id_a if cid not in by_id_b],
            "only_b": [cid for cid in by_id_b if cid not in by_id_a]}


def stage_passes(row: dict, stage: str) -> Optional[bool]:
    """Whether one stage passed for a row; None when the row did not measure that stage."""
    return None if errored(row) else stage_results(row).get(stage)


def stage_rate(report: dict, stage: str) -> dict:
    verdicts = [stage_passes(r, stage) for r in report["rows"]]
    measured = [v for v in verdicts if v is not None]
    return rate(sum(measured), len(measured))


def run_line(label: str, path: str, report: dict) -> str:
    """One run's pass rate; as in evaluate's summary, errored cases are not scored."""
    scored = [r for r in report["rows"] if not errored(r)]
    errors = len(report["rows"]) - len(scored)
    return (f"{label}: {path}  model {report['key'].get('model', 'none')}  pass "
            f"{rate_text(rate(sum(passed(r) for r in scored), len(scored)))}"
            + (f", {errors} errored (not scored)" if errors else ""))


def ids(rows_or_ids: list) -> str:
    return ", ".join(r if isinstance(r, str) else r["id"] for r in rows_or_ids)


def render(path_a: str, report_a: dict, path_b: str, report_b: dict) -> str:
    """The whole comparison as text."""
    d = diff_cases(report_a["rows"], report_b["rows"])
    lines = [run_line("A", path_a, report_a), run_line("B", path_b, report_b),
             f"fixed by B ({len(d['fixed'])}): {ids([a for a, _ in d['fixed']])}".rstrip()]
    lines += [f"  {a['id']}: was {a['first_failure']} in A: {reason(a)}" for a, _ in d["fixed"]]
    lines.append(f"broken by B ({len(d['broken'])}): {ids([b for _, b in d['broken']])}".rstrip())
    lines += [f"  {b['id']}: {b['first_failure']}: {reason(b)}" for _, b in d["broken"]]
    lines.append(f"changed stage ({len(d['changed'])}): " + ", ".join(
        f"{a['id']} ({a['first_failure']} -> {b['first_failure']})" for a, b in d["changed"]))
    lines += [f"  {b['id']}: {b['first_failure']}: {reason(b)}" for _, b in d["changed"]]
    for side in ("A", "B"):
        if d[f"errored_{side.lower()}"]:
            lines.append(f"errored in {side} ({len(d[f'errored_{side.lower()}'])}): "
                         f"{ids(d[f'errored_{side.lower()}'])}")
            lines += [f"  {r['id']}: {reason(r)}" for r in d[f"errored_{side.lower()}"]]
        if d[f"only_{side.lower()}"]:
            lines.append(f"only in {side} ({len(d[f'only_{side.lower()}'])}): {ids(d[f'only_{side.lower()}'])}")
    lines.append("per stage pass rate (A -> B):")
    width = max(len(s) for s in STAGES)
    lines += [f"  {stage:<{width}}  {rate_text(stage_rate(report_a, stage))} -> "
              f"{rate_text(stage_rate(report_b, stage))}" for stage in STAGES]
    return "\n".join(line.rstrip() for line in lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="the baseline report, e.g. runs/rules.json")
    parser.add_argument("b", help="the report to compare with it")
    args = parser.parse_args(argv)
    try:
        report_a, report_b = load_report(args.a), load_report(args.b)
        differences = measurement_differences({**report_a["key"], "threshold": report_a["threshold"]},
                                              {**report_b["key"], "threshold": report_b["threshold"]})
        if differences:
            raise CompareError(f"runs differ in {', '.join(differences)}; compare runs measured the same way")
    except CompareError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    print(render(args.a, report_a, args.b, report_b))
    return 0


if __name__ == "__main__":
    sys.exit(main())

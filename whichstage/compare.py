"""Diff two saved reports case by case: which cases run B fixed, broke, or moved to another failing stage.

`python compare.py runs/A.json runs/B.json [--html OUT]` refuses runs measured differently (cases, judge,
embedder, k, faithfulness setting, threshold) and reports of different case sets (a dev report and an .all
one). The two runs are paired (the same cases), so whether B differs from A beyond noise is an exact McNemar
test on the cases that changed outcome, overall and per stage. Every refusal, and a report that is not the
shape compare reads, is one line on stderr and exit 2.
"""
import sys


import argparse
from pathlib import Path
from typing import Callable, Optional

from whichstage.cassette import printable_stdout, read_json, write_atomic
from whichstage import console
from whichstage.html_report import CSS, escaped
from whichstage.stages import (BEHAVIOUR_JUDGED, STAGES, failure_reason, stage_order, stage_results,
                            threshold_differences)
from whichstage.stats import mcnemar_exact, rate, rate_text

# A different model under test, prompt or pages is what a comparison is for; these change the measurement.
MEASURED_BY = ("cases", "cases_sha", "judge", "embedder", "k", "strict_faithfulness", "criteria")
ERROR = "error"
FIRST_FAILURES = (*STAGES, ERROR)
ROW_STAGES = ("behaviour", "tools", "retrieval")  # a row field each; the other stages are in row["judged"]
SHOWN_IDS = 3  # how many differing case ids a refusal names
ALPHA = 0.05
NOISE = "not distinguishable from noise at 5%"


class CompareError(Exception):
    """A report that cannot be compared: unreadable, not a report, or measured differently."""


class ShapeError(Exception):
    """A report field compare reads is missing or of the wrong type: 'where: what is wrong'."""


def load_report(path: str) -> dict:
    """Read one saved report and check the shape of every field compare reads (check_report), turning every
    way it can be unusable into a one-line error naming the file as typed."""
    report = read_json(path, CompareError, path)
    if not looks_like_report(report):
        raise CompareError(f"{path}: not an evaluation report (expected 'key', 'threshold' and 'rows' with 'id' "
                           f"and 'first_failure')")
    try:
        check_report(report)
    except ShapeError as e:
        raise CompareError(f"{path}: {e}") from None
    return report


def looks_like_report(data: object) -> bool:
    """An evaluation report, however broken, rather than some other JSON (a calibration report has 'key',
    'threshold' and 'rows' too, but no row of it has a first failure)."""
    if not (isinstance(data, dict) and {"key", "threshold", "rows"} <= data.keys()):
        return False
    rows = data["rows"]
    return not (isinstance(rows, list) and rows and not any(isinstance(r, dict) and "first_failure" in r
                                                            for r in rows))


def kind(value: object) -> str:
    """A JSON value's type as a sentence names it."""
    if value is None:
        return "null"
    for types, name in ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "a list"),
                        (dict, "an object")):
        if isinstance(value, types):
            return name
    return type(value).__name__


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def expect(holder: dict, field: str, where: str, ok: Callable[[object], bool], wanted: str,
           required: bool = True) -> object:
    """holder[field], refused unless ok(value); an absent field is refused when required, else None."""
    if field not in holder:
        if required:
            raise ShapeError(f"{where}.{field}: missing")
        return None
    value = holder[field]
    if not ok(value):
        raise ShapeError(f"{where}.{field}: expected {wanted}, got {kind(value)}")
    return value


def is_str(value: object) -> bool:
    return isinstance(value, str)


def is_object(value: object) -> bool:
    return isinstance(value, dict)


def is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def or_null(ok: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or ok(value)


def one_line(case_id: str) -> str:
    """A case id as a refusal shows it: quoted when it holds a line break or another unprintable character."""
    return case_id if case_id.isprintable() else repr(case_id)


def check_report(report: dict) -> None:
    """Refuse, with a ShapeError, a report missing a field compare reads or holding one of the wrong type:
    the key's measured-with fields, the threshold, the split, and every row (see check_row)."""
    key = report["key"]
    if not isinstance(key, dict):
        raise ShapeError(f"key: expected an object, got {kind(key)}")
    for field in MEASURED_BY:  # compared and shown, never computed with: any JSON scalar
        expect(key, field, "key", lambda v: v is None or isinstance(v, (str, int, float)),
               "a string, number, boolean or null", required=field != "criteria")  # a project without criteria
    if not is_number(report["threshold"]):
        raise ShapeError(f"threshold: expected a number, got {kind(report['threshold'])}")
    own = report.get("thresholds", {})
    if not isinstance(own, dict):
        raise ShapeError(f"thresholds: expected an object, got {kind(own)}")
    for stage, value in own.items():
        if not is_number(value):
            raise ShapeError(f"thresholds.{stage}: expected a number, got {kind(value)}")
    if "split" in report and not isinstance(report["split"], str):
        raise ShapeError(f"split: expected a string, got {kind(report['split'])}")
    if not isinstance(report["rows"], list):
        raise ShapeError(f"rows: expected a list, got {kind(report['rows'])}")
    seen: dict[str, int] = {}
    for i, r in enumerate(report["rows"]):
        if not isinstance(r, dict):
            raise ShapeError(f"rows[{i}]: expected an object, got {kind(r)}")
        expect(r, "id", f"rows[{i}]", is_str, "a string")
        where = f"rows[{i}] ({one_line(r['id'])})"
        if r["id"] in seen:
            raise ShapeError(f"{where}.id: the same id as rows[{seen[r['id']]}]")
        seen[r["id"]] = i
        check_row(r, where)


def check_row(r: dict, where: str) -> None:
    """The fields of one row the diff reads: first_failure; for an errored row its error text; otherwise what
    stages.stage_results reads of every stage, and what stages.failure_reason reads of the first failing one."""
    first = expect(r, "first_failure", where, or_null(is_str), "a stage name or null")
    own = expect(r, "criteria", where, is_object, "an object of thresholds", required=False) or {}
    for name in own:
        expect(own, name, f"{where}.criteria", is_number, "a number")
    valid = (*FIRST_FAILURES, *own)
    if first is not None and first not in valid:
        raise ShapeError(f"{where}.first_failure: unknown stage {first!r} (valid: {', '.join(valid)})")
    expect(r, "error", where, or_null(is_str), "a string or null", required=False)
    if first == ERROR:
        return
    if first in ROW_STAGES and r.get(first) is None:
        raise ShapeError(f"{where}.{first}: {'null' if first in r else 'missing'}, but first_failure names it")
    # stage_results: every stage the row measured
    for field in ("behaviour", "tools"):
        if expect(r, field, where, or_null(is_object), "an object or null", required=False) is not None:
            expect(r[field], "pass", f"{where}.{field}", lambda v: isinstance(v, bool), "a boolean")
    if expect(r, "retrieval", where, or_null(is_object), "an object or null", required=False) is not None:
        expect(r["retrieval"], "recall", f"{where}.retrieval", is_number, "a number")
    expect(r, "expected_behavior", where, is_str, "a string", required=False)
    judged = expect(r, "judged", where, is_object, "an object", required=False) or {}
    for name, verdict in judged.items():
        if name in BEHAVIOUR_JUDGED:
            continue
        if not isinstance(verdict, dict):
            raise ShapeError(f"{where}.judged.{name}: expected an object, got {kind(verdict)}")
        expect(verdict, "score", f"{where}.judged.{name}", or_null(is_number), "a number or null")
        expect(verdict, "threshold", f"{where}.judged.{name}", is_number, "a number", required=False)
    if first is not None and first not in ROW_STAGES and first not in judged:
        raise ShapeError(f"{where}.judged.{first}: missing, but first_failure names it")
    # failure_reason: what it reads of the first failing stage
    if first is None:
        return
    if first == "tools":
        tools = r["tools"]
        expect(tools, "reason", f"{where}.tools", or_null(is_str), "a string or null")
        if "deepeval" not in tools:
            for field in ("missing", "unexpected"):
                expect(tools, field, f"{where}.tools", is_strings, "a list of strings")
        expect(tools, "wrong_args", f"{where}.tools", is_strings, "a list of strings", required=False)
    elif first == "behaviour":
        expect(r["behaviour"], "failures", f"{where}.behaviour", is_strings, "a list of strings")
    elif first == "retrieval":
        expect(r["retrieval"], "missed", f"{where}.retrieval", is_strings, "a list of strings")
        expect(r, "retrieved", where, is_strings, "a list of strings")
        counterfactual = expect(r, "counterfactual", where, or_null(is_object), "an object or null", required=False)
        if counterfactual and counterfactual.get("available") is False:
            expect(counterfactual, "why", f"{where}.counterfactual", is_str, "a string")
        elif counterfactual:
            fixed = expect(counterfactual, "fixed", f"{where}.counterfactual", lambda v: isinstance(v, bool),
                           "a boolean")
            if not fixed:
                expect(counterfactual, "first_failure", f"{where}.counterfactual", or_null(is_str),
                       "a stage name or null")
    else:
        expect(judged[first], "reason", f"{where}.judged.{first}", or_null(is_str), "a string or null")


def case_differences(path_a: str, report_a: dict, path_b: str, report_b: dict) -> Optional[str]:
    """Why two reports do not hold the same cases (different splits, or different case ids), or None."""
    ids_a, ids_b = [r["id"] for r in report_a["rows"]], [r["id"] for r in report_b["rows"]]
    in_a, in_b = set(ids_a), set(ids_b)
    only_a, only_b = [i for i in ids_a if i not in in_b], [i for i in ids_b if i not in in_a]

    def some(label: str, found: list[str]) -> list[str]:
        more = f" and {len(found) - SHOWN_IDS} more" if len(found) > SHOWN_IDS else ""
        return [f"{len(found)} only in {label}: {', '.join(map(one_line, found[:SHOWN_IDS]))}{more}"] \
            if found else []

    cases = "; ".join(some("A", only_a) + some("B", only_b))
    split_a, split_b = report_a.get("split"), report_b.get("split")  # compared when both reports name theirs
    if split_a is not None and split_b is not None and split_a != split_b:
        return (f"A ({path_a}) is a report of the {one_line(split_a)} split, B ({path_b}) of the "
                f"{one_line(split_b)} split, so their "
                f"case sets differ{f' ({cases})' if cases else ''}; compare reports of the same split")
    if cases:
        return f"A ({path_a}) and B ({path_b}) hold different cases ({cases}); compare reports of the same cases"
    return None


def measurement_differences(key_a: dict, key_b: dict) -> list[str]:
    """'field (A: x, B: y)' for every key field that makes two runs' scores incomparable."""
    shown = lambda value: "none" if value is None else str(value)  # noqa: E731
    return [f"{field} (A: {shown(key_a.get(field))}, B: {shown(key_b.get(field))})"
            for field in MEASURED_BY if key_a.get(field) != key_b.get(field)] + \
        [f"{field} (A: {a}, B: {b})" for field, a, b in threshold_differences(key_a, key_b)]


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


def overall_rate(report: dict) -> dict:
    """The share of cases passing every stage; as in evaluate's summary, errored cases are not scored."""
    scored = [r for r in report["rows"] if not errored(r)]
    return rate(sum(passed(r) for r in scored), len(scored))


def run_line(label: str, path: str, report: dict) -> str:
    """One run's pass rate, and how many of its cases errored."""
    errors = sum(errored(r) for r in report["rows"])
    return (f"{label}: {path}  model {report['key'].get('model', 'none')}  pass {rate_text(overall_rate(report))}"
            + (f", {errors} errored (not scored)" if errors else ""))


def ids(rows_or_ids: list) -> str:
    return ", ".join(r if isinstance(r, str) else r["id"] for r in rows_or_ids)


def paired_test(rows_a: list[dict], rows_b: list[dict], stage: Optional[str] = None) -> dict:
    """The exact McNemar test on the cases both runs scored: overall (passes every stage) or for one stage.

    A case is paired when it is in both runs and errored in neither; for a stage, also only when both runs
    measured that stage. `broken` passed in A and failed in B, `fixed` the reverse; the cases that kept
    their outcome say nothing about which run is better and only count in `paired`."""
    by_id_b = {r["id"]: r for r in rows_b}
    outcomes = []
    for a in rows_a:
        b = by_id_b.get(a["id"])
        if b is None or errored(a) or errored(b):
            continue
        pass_a, pass_b = (passed(a), passed(b)) if stage is None else (stage_passes(a, stage), stage_passes(b, stage))
        if pass_a is not None and pass_b is not None:
            outcomes.append((pass_a, pass_b))
    broken = sum(1 for pass_a, pass_b in outcomes if pass_a and not pass_b)
    fixed = sum(1 for pass_a, pass_b in outcomes if pass_b and not pass_a)
    return {"fixed": fixed, "broken": broken, "paired": len(outcomes), "p": mcnemar_exact(broken, fixed)}


def verdict(test: dict) -> str:
    """'B is better' or 'B is worse' when p < 5%, else that the difference is not distinguishable from noise."""
    if test["p"] < ALPHA:
        return f"B is {'better' if test['fixed'] > test['broken'] else 'worse'} (significant at 5%)"
    return NOISE


def p_text(p: float) -> str:
    """p to two significant digits, or as many more as it takes not to round across the 5% line."""
    for digits in range(2, 18):
        shown = f"{p:.{digits}g}"
        if (float(shown) < ALPHA) == (p < ALPHA):
            return shown
    return repr(p)


def paired_text(test: dict) -> str:
    """'2 fixed, 0 broken of 10 paired cases; exact McNemar p = 0.5: not distinguishable from noise at 5%'."""
    return (f"{test['fixed']} fixed, {test['broken']} broken of {test['paired']} paired "
            f"case{'' if test['paired'] == 1 else 's'}; exact McNemar p = {p_text(test['p'])}: {verdict(test)}")


def comparison(report_a: dict, report_b: dict) -> dict:
    """Everything both renderings show: the case diff, the paired tests and the per-stage pass rates."""
    rows_a, rows_b = report_a["rows"], report_b["rows"]
    return {"diff": diff_cases(rows_a, rows_b), "overall": paired_test(rows_a, rows_b),
            "stages": {stage: {"a": stage_rate(report_a, stage), "b": stage_rate(report_b, stage),
                               "test": paired_test(rows_a, rows_b, stage)} for stage in stage_order(rows_a + rows_b)}}


def render(path_a: str, report_a: dict, path_b: str, report_b: dict) -> str:
    """The whole comparison as text."""
    c = comparison(report_a, report_b)
    d = c["diff"]
    lines = [run_line("A", path_a, report_a), run_line("B", path_b, report_b),
             f"overall: {paired_text(c['overall'])}",
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
    width = max(len(s) for s in c["stages"])
    lines += [f"  {stage:<{width}}  {rate_text(s['a'])} -> {rate_text(s['b'])}" for stage, s in c["stages"].items()]
    lines.append("per stage, paired (both runs measured the stage, neither errored):")
    lines += [f"  {stage + ':':<{width + 1}} {paired_text(s['test'])}" for stage, s in c["stages"].items()]
    return "\n".join(line.rstrip() for line in lines)


def _verdict_class(test: dict) -> str:
    """html_report's cell colours: better is pass, worse is fail, noise is neutral."""
    if test["p"] >= ALPHA:
        return "neutral"
    return "pass" if test["fixed"] > test["broken"] else "fail"


def _case_list(title: str, items: list[tuple[str, str]]) -> str:
    """One titled list of (case id, what to say about it); the title carries the count."""
    listed = "".join(f"<li><code>{escaped(cid)}</code>: {escaped(text)}</li>" for cid, text in items)
    return f"<h2>{escaped(title)} ({len(items)})</h2>" + (f"<ul>{listed}</ul>" if listed else "<p>none</p>")


def html_page(path_a: str, report_a: dict, path_b: str, report_b: dict) -> str:
    """The comparison as one self-contained HTML page: inline CSS (html_report's), nothing from the network,
    every value escaped."""
    c = comparison(report_a, report_b)
    d, overall = c["diff"], c["overall"]
    runs = "".join(f"<li>{escaped(run_line(label, path, report))}</li>"
                   for label, path, report in (("A", path_a, report_a), ("B", path_b, report_b)))
    head = ("<tr><th>stage</th><th>A</th><th>B</th><th>fixed</th><th>broken</th><th>paired</th>"
            "<th>exact McNemar p</th><th>verdict</th></tr>")

    def paired_cells(test: dict) -> str:
        return (f'<td class="num">{test["fixed"]}</td><td class="num">{test["broken"]}</td>'
                f'<td class="num">{test["paired"]}</td><td class="num">{escaped(p_text(test["p"]))}</td>'
                f'<td class="{_verdict_class(test)}">{escaped(verdict(test))}</td>')

    rows = [f'<tr data-stage="{escaped(stage)}"><td>{escaped(label)}</td><td>{escaped(rate_text(rate_a))}</td>'
            f'<td>{escaped(rate_text(rate_b))}</td>{paired_cells(test)}</tr>'
            for stage, label, rate_a, rate_b, test in
            [("overall", "overall (every stage)", overall_rate(report_a), overall_rate(report_b), overall),
             *((stage, stage, s["a"], s["b"], s["test"]) for stage, s in c["stages"].items())]]
    sections = [
        _case_list("fixed by B", [(a["id"], f"was {a['first_failure']} in A: {reason(a)}") for a, _ in d["fixed"]]),
        _case_list("broken by B", [(b["id"], f"{b['first_failure']}: {reason(b)}") for _, b in d["broken"]]),
        _case_list("changed stage", [(b["id"], f"{a['first_failure']} -> {b['first_failure']}: {reason(b)}")
                                     for a, b in d["changed"]]),
        _case_list("errored in A", [(r["id"], reason(r)) for r in d["errored_a"]]),
        _case_list("errored in B", [(r["id"], reason(r)) for r in d["errored_b"]])]
    sections += [_case_list(f"only in {side}", [(cid, "not in the other run") for cid in d[f"only_{side.lower()}"]])
                 for side in ("A", "B") if d[f"only_{side.lower()}"]]
    title = f"Comparison: {path_a} -> {path_b}"
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{escaped(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{escaped(title)}</h1><ul>{runs}</ul>"
            f'<p id="verdict" class="{_verdict_class(overall)}">'
            f"<strong>overall: {escaped(paired_text(overall))}</strong></p>"
            f"<p>Paired test: the exact McNemar test, two-sided, on the cases that changed outcome; a case is "
            f"paired when both runs scored it (for a stage: both measured that stage) and neither errored.</p>"
            f'<h2>Per stage (A &rarr; B)</h2><table id="stages"><thead>{head}</thead>'
            f"<tbody>{''.join(rows)}</tbody></table>{''.join(sections)}</body></html>\n")


def write_error(e: OSError) -> str:
    """Why a file could not be written, in a few words; a file where a folder should be is named."""
    if isinstance(e, FileExistsError) and e.filename and Path(e.filename).is_file():
        return f"{e.filename} is a file, not a folder"
    return e.strerror or str(e)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="the baseline report, e.g. runs/rules.json")
    parser.add_argument("b", help="the report to compare with it")
    parser.add_argument("--html", metavar="OUT", help="also write the comparison as one self-contained HTML page")
    args = parser.parse_args(argv)
    printable_stdout()
    try:
        if args.html == "":
            raise CompareError("--html: empty path; name the page to write, e.g. --html diff.html")
        report_a, report_b = load_report(args.a), load_report(args.b)
        differences = measurement_differences(
            {**report_a["key"], "threshold": report_a["threshold"], "thresholds": report_a.get("thresholds")},
            {**report_b["key"], "threshold": report_b["threshold"], "thresholds": report_b.get("thresholds")})
        if differences:
            raise CompareError(f"runs differ in {', '.join(differences)}; compare runs measured the same way")
        other_cases = case_differences(args.a, report_a, args.b, report_b)
        if other_cases:
            raise CompareError(other_cases)
    except CompareError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    text = render(args.a, report_a, args.b, report_b)
    if args.html is not None:
        try:
            write_atomic(Path(args.html), html_page(args.a, report_a, args.b, report_b))
        except OSError as e:
            print(f"compare.py: {args.html}: cannot write: {write_error(e)}", file=sys.stderr)
            return 2
        text += f"\n\nHTML written to {args.html}"
    stopped = console.write_stdout(text, command="compare.py")
    return 0 if stopped is None else stopped


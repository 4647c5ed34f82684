"""Diff two saved reports case by case: which cases run B fixed, broke, or moved to another failing stage.

`python compare.py A B [--html OUT]` takes each run as a report file (runs/A.json) or as a label kept in the
project's runs/history (`evaluate.py --label NAME`). It refuses runs measured differently (judge, embedder,
k, faithfulness setting, threshold, criteria, cases) unless `--across` says to compare them anyway, naming
at the top what differs and pairing the cases both hold. The two runs are paired (the same cases), so
whether B differs from A beyond noise is an exact McNemar test on the cases that changed outcome, overall
and per stage. Every refusal, and a report that is not the shape compare reads, is one line on stderr and
exit 2.
"""
import argparse
import re
from pathlib import Path
from typing import Optional

from whichstage.model.dicts import ReportDict
from whichstage._util import console
from whichstage._util.files import printable_stdout, shown, write_atomic
from whichstage.analysis.compare_diff import comparison, diagnosis_change, ids, paired_text, reason, run_line
from whichstage.analysis.compare_html import html_page
from whichstage.analysis.comparability import across_lines, common_cases, refusal
from whichstage.analysis.compare_load import CompareError, load_report
from whichstage.run.files import HISTORY, kept_labels, labelled
from whichstage._util.stats import rate_text
from whichstage._util.ending import ended

def render(path_a: str, report_a: ReportDict, path_b: str, report_b: ReportDict) -> str:
    """The whole comparison as text."""
    c = comparison(report_a, report_b)
    d = c["diff"]
    lines = [run_line("A", path_a, report_a), run_line("B", path_b, report_b),
             f"overall: {paired_text(c['overall'])}",
             f"fixed by B ({len(d['fixed'])}): {ids([a for a, _ in d['fixed']])}".rstrip()]
    lines += [f"  {a['id']}: was {a['first_failure']} in A: {reason(a)}" for a, _ in d["fixed"]]
    lines.append(f"broken by B ({len(d['broken'])}): {ids([b for _, b in d['broken']])}".rstrip())
    for a, b in d["broken"]:
        lines.append(f"  {b['id']}: {b['first_failure']}: {reason(b)}")
        lines += [f"    {change}" for change in [diagnosis_change(a, b)] if change]
    lines.append(f"changed stage ({len(d['changed'])}): " + ", ".join(
        f"{a['id']} ({a['first_failure']} -> {b['first_failure']})" for a, b in d["changed"]))
    for a, b in d["changed"]:
        lines.append(f"  {b['id']}: {b['first_failure']}: {reason(b)}")
        lines += [f"    {change}" for change in [diagnosis_change(a, b)] if change]
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


def write_error(e: OSError) -> str:
    """Why a file could not be written, in a few words; a file where a folder should be is named."""
    if isinstance(e, FileExistsError) and e.filename and Path(e.filename).is_file():
        return f"{e.filename} is a file, not a folder"
    return e.strerror or str(e)


def main(argv: Optional[list[str]] = None) -> int:
    prog = console.name("compare.py")  # how the user called this command, for its messages
    parser = argparse.ArgumentParser(prog=prog, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("a", help="the baseline run: a report (runs/NAME.json) or a label kept in runs/history "
                        "(LABEL, or RUN/LABEL when the label names several runs)")
    parser.add_argument("b", help="the run to compare with it, named the same way")
    parser.add_argument("--project", metavar="DIR", help="the project whose runs/history holds the labels "
                        "(default: the current folder)")
    parser.add_argument("--across", action="store_true", help="compare runs measured differently (another "
                        "embedder, judge, k, threshold or case set) anyway: say what differs, pair the cases both hold")
    parser.add_argument("--html", metavar="OUT", help="also write the comparison as one self-contained HTML page")
    args = parser.parse_args(argv)
    printable_stdout()
    try:
        if args.html == "":
            raise CompareError("--html: empty path; name the page to write, e.g. --html diff.html")
        path_a, path_b = (run_path(arg, Path(args.project or ".")) for arg in (args.a, args.b))
        report_a, report_b = load_report(path_a), load_report(path_b)
        refused = None if args.across else refusal(path_a, report_a, path_b, report_b)
        if refused:
            raise CompareError(refused)
    except CompareError as e:
        return ended(prog, e)
    notes = across_lines(report_a, report_b) if args.across else []
    report_a, report_b = common_cases(report_a, report_b) if args.across else (report_a, report_b)
    text = "\n".join([*notes, render(path_a, report_a, path_b, report_b)])
    if args.html is not None:
        try:
            write_atomic(Path(args.html), html_page(path_a, report_a, path_b, report_b, notes))
        except OSError as e:
            return ended(prog, CompareError(f"{args.html}: cannot write: {write_error(e)}"))
        text += f"\n\nHTML written to {args.html}"
    stopped = console.write_stdout(text, command=prog)
    return 0 if stopped is None else stopped


LABEL = re.compile(r"(?:(?!\.\.?/)[A-Za-z0-9._~+-]+/)?[A-Za-z0-9_-][A-Za-z0-9._-]*")  # LABEL, RUN/LABEL: no path
SHOWN_LABELS = 12  # how many labels an unknown one's refusal lists


def run_path(run: str, project: Path) -> str:
    """A run as compare names it: a report file as typed, or the report kept under a label in the project's
    runs/history; a label that names no run, or several, is refused listing what there is."""
    if run.endswith(".json") or Path(run).exists() or not LABEL.fullmatch(run):
        return run
    found, history = labelled(project, run), shown(project / HISTORY)
    if len(found) == 1:
        return shown(found[0])
    if found:
        raise CompareError(f"label {run} names {len(found)} runs in {history}: "
                           f"{', '.join(f'{p.parent.name}/{p.stem}' for p in found)}; name one as RUN/LABEL")
    labels = kept_labels(project)
    more = f" and {len(labels) - SHOWN_LABELS} more" if len(labels) > SHOWN_LABELS else ""
    listed = f"labels there: {', '.join(labels[:SHOWN_LABELS])}{more}" if labels else \
        "none kept there yet: every run that writes a report keeps one, and --label NAME names it"
    raise CompareError(f"{run}: not a report file, nor a label kept in {history} ({listed})")

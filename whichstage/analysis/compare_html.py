"""The comparison of two runs as one self-contained HTML page: html_report's inline CSS, nothing from the
network, every value escaped."""
from typing import Sequence

from whichstage.model.dicts import ReportDict
from whichstage.analysis.compare_diff import (ALPHA, comparison, diagnosis_change, overall_rate, p_text, paired_text,
                                              reason, run_line, verdict)
from whichstage.render.html_markup import CSS, escaped
from whichstage._util.stats import rate_text


def _verdict_class(test: dict) -> str:
    """html_report's cell colours: better is pass, worse is fail, noise is neutral."""
    if test["p"] >= ALPHA:
        return "neutral"
    return "pass" if test["fixed"] > test["broken"] else "fail"


def changed(a: dict, b: dict) -> str:
    """'; diagnosis in B: ...; in A: ...' when the case's diagnosis names another component, else ''."""
    change = diagnosis_change(a, b)
    return f"; {change}" if change else ""


def _case_list(title: str, items: list[tuple[str, str]]) -> str:
    """One titled list of (case id, what to say about it); the title carries the count."""
    listed = "".join(f"<li><code>{escaped(cid)}</code>: {escaped(text)}</li>" for cid, text in items)
    return f"<h2>{escaped(title)} ({len(items)})</h2>" + (f"<ul>{listed}</ul>" if listed else "<p>none</p>")


def html_page(path_a: str, report_a: ReportDict, path_b: str, report_b: ReportDict, notes: Sequence[str] = ()) -> str:
    """The comparison as one self-contained HTML page: inline CSS (html_report's), nothing from the network,
    every value escaped; `notes`, what differs between runs compared --across, at the top."""
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
        _case_list("broken by B", [(b["id"], f"{b['first_failure']}: {reason(b)}" + changed(a, b))
                                   for a, b in d["broken"]]),
        _case_list("changed stage", [(b["id"], f"{a['first_failure']} -> {b['first_failure']}: {reason(b)}"
                                      + changed(a, b)) for a, b in d["changed"]]),
        _case_list("errored in A", [(r["id"], reason(r)) for r in d["errored_a"]]),
        _case_list("errored in B", [(r["id"], reason(r)) for r in d["errored_b"]])]
    sections += [_case_list(f"only in {side}", [(cid, "not in the other run") for cid in d[f"only_{side.lower()}"]])
                 for side in ("A", "B") if d[f"only_{side.lower()}"]]
    title = f"Comparison: {path_a} -> {path_b}"
    across = (f'<div id="across"><p>{escaped(notes[0])}</p><ul>'
              + "".join(f"<li>{escaped(line.strip())}</li>" for line in notes[1:]) + "</ul></div>") if notes else ""
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{escaped(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{escaped(title)}</h1>{across}<ul>{runs}</ul>"
            f'<p id="verdict" class="{_verdict_class(overall)}">'
            f"<strong>overall: {escaped(paired_text(overall))}</strong></p>"
            f"<p>Paired test: the exact McNemar test, two-sided, on the cases that changed outcome; a case is "
            f"paired when both runs scored it (for a stage: both measured that stage) and neither errored.</p>"
            f'<h2>Per stage (A &rarr; B)</h2><table id="stages"><thead>{head}</thead>'
            f"<tbody>{''.join(rows)}</tbody></table>{''.join(sections)}</body></html>\n")

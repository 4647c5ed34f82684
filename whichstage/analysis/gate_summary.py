"""The baseline gate's verdict as a short markdown page for CI (a file beside the reports, and GitHub's step
summary): what regressed, per case, with stage and reason; what improved; every stage's pass rate with its
interval, tolerance and paired test. Pure."""
from whichstage.analysis.gate import Finding, GateResult
from whichstage.model.stages import IN_CODE, OVERALL
from whichstage.scoring.gating import stage_order
from whichstage._util.stats import rate_text
from whichstage.model.dicts import ReportDict


def cell(text: object) -> str:
    """Text (or any value, as str shows it) as one markdown table cell: pipes escaped, one line."""
    return " ".join(str(text).replace("|", "\\|").split())


def findings_table(findings: list[Finding]) -> list[str]:
    return ["| case | stage | reason |", "|---|---|---|",
            *[f"| {cell(f.case)} | {cell(f.stage)} | {cell(f.reason)} |" for f in findings]]


def markdown(report: ReportDict, baseline: dict, result: GateResult, other: list[str]) -> str:
    """The summary of one gate: `other` are regressions that are no case's nor stage's (the ladder's)."""
    key = report["key"]
    per_case = [f for f in result.regressions if f.case] + [b for c in result.stages for b in c.broke]
    by_stage = [f for f in result.regressions if not f.case]
    count = len(result.regressions) + len(other)
    lines = [f"### whichstage gate: {f'{count} regression(s)' if count else 'no regression'}", "",
             f"Run `{key['cases']}` with model `{key['model']}`, embedder `{key['embedder']}`, judge `{key['judge']}`"
             f" (split {report.get('split', 'all')}), checked against its baseline.", ""]
    if per_case:
        lines += ["**Regressed cases**", "", *findings_table(per_case), ""]
    if by_stage or other:
        lines += ["**Regressed stages**", "", *[f"- {cell(f.text())}" for f in by_stage],
                  *[f"- {cell(o)}" for o in other], ""]
    if result.improvements:
        lines += ["**Improved**", "", *findings_table(result.improvements), ""]
    lines += ["**Pass rates** (baseline, now, 95% interval; a stage decided in code gates each case)", "",
              "| stage | baseline | now | tolerance | paired test |", "|---|---|---|---|---|"]
    checked = {c.stage: c for c in result.stages}
    for stage in (*stage_order(report["rows"]), OVERALL):
        before = baseline["pass_rate"] if stage == OVERALL else baseline["stages"].get(stage)
        after = report["summary"]["pass_rate"] if stage == OVERALL else report["summary"]["stages"].get(stage)
        if not before and not after:
            continue
        c = checked.get(stage)
        tolerance = "0, per case" if stage in IN_CODE else f"{c.tolerance:.0%}" if c else "-"
        test = (f"{c.test['broken']} broken, {c.test['fixed']} fixed of {c.test['paired']}; p = {c.test['p']:.2g}"
                if c else "-") + (" **REGRESSED**" if c and c.regressed else "")
        lines.append(f"| {stage} | {rate_text(before) if before else '-'} | {rate_text(after) if after else '-'} | "
                     f"{tolerance} | {test} |")
    return "\n".join(lines) + "\n"

"""The markdown report of a run: the stage table, the summary with intervals, why each failing case
failed, tokens and latency. Pure: `markdown(report)` returns text.

Every text from the inputs or the models (answers and reasons, tool, model and category names, error
messages...) goes through `text`, `cell` or `code` where it is emitted, and the whole text through
`console.visible` (no control character shown raw): GitHub and most viewers render
markdown's inline HTML, so `<`, `>` and `&` become entities (shown as the characters), a backtick cannot
open a code span, a line break cannot end a table row or a list item, and `|` cannot end a table cell. Text
with none of these characters is emitted as is."""
import re
from typing import Optional

from whichstage.model.stages import SCORED, table_heads
from whichstage.render import fix_list
from whichstage.scoring.gating import criteria_of
from whichstage.scoring import gating
from whichstage._util.console import cases, visible
from whichstage.run.ladder import markdown_lines as ladder_lines
from whichstage.render.row_view import (CAUSE, FAIL, SUPPLIED, RowView, StageResult, failure_reason,
                                        row_view)
from whichstage.scoring.tools import deepeval_disagrees
from whichstage._util.stats import rate_text
from whichstage.model.dicts import ReportDict, RowDict, at_k


ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "`": "\\`"}
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def text(value) -> str:
    """Outside text in markdown prose: HTML read as characters, a backtick as a backtick, a line break as <br>
    (which keeps it within its list item or table row)."""
    value = str(value)
    if "&" in value or "<" in value or ">" in value or "`" in value:
        value = "".join(ENTITIES.get(c, c) for c in value)
    return LINE_BREAK.sub("<br>", value) if "\n" in value or "\r" in value else value


def cell(value) -> str:
    """Outside text in a table cell: `text`, and `|` escaped so it stays in its cell (GitHub's tables read
    `\\|` as a pipe, in a code span too)."""
    return text(value).replace("|", "\\|")


def code(value) -> str:
    """Outside text as an inline code span (outside a table): fenced by more backticks than it holds in a row,
    so none ends it; a line break as a space, as a code span shows it anyway. HTML is never read inside a code
    span, so nothing else needs escaping."""
    value = LINE_BREAK.sub(" ", str(value))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or (value.startswith(" ") and value.endswith(" ")
                                                                   and value.strip()) else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def fmt(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def seconds(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f} s"


def table_row(r: RowDict, view: Optional[RowView] = None) -> str:
    """A case's row of the stage table: each stage's verdict as row_view gives it (`view`, when the caller has
    it), a failing score marked FAIL."""
    ret, stages = r.get("retrieval"), (view or row_view(r)).stages
    scores = " | ".join(scored(stages[m]) if m in stages else "-" for m in SCORED)
    return (f"| {cell(r['id'])} | {cell(', '.join(r['calls'])) or 'none'} | {stages['behaviour'].mark} | "
            f"{stages['tools'].mark} | {'-' if ret is None else ('yes' if ret['hit'] else 'NO')} | "
            f"{scored(stages['retrieval'])} | {fmt(ret and ret['reciprocal_rank'])} | {scores} | "
            f"{cell(r['first_failure'] or '-')} |")


def scored(result: StageResult) -> str:
    """A stage's score as a table cell: 'FAIL 0.50' where it fails its stage, else the score alone."""
    return f"FAIL {fmt(result.score)}" if result.verdict == FAIL and result.gates == result.stage \
        else fmt(result.score)


def markdown(report: ReportDict, views: Optional[list[RowView]] = None) -> str:
    """The whole report: the run it is, the stage table, then `summary`. Only the line starting 'Latency:'
    prints measured times. `views`: the rows' row_view, when the caller has them."""
    k = report["k"]
    lines = [f"# {run_line(report)}\n", *fix_list.markdown_lines(report),
             "| " + " | ".join(table_heads(k)) + " |", "|---" * len(table_heads(k)) + "|"]
    rows = report["rows"]
    lines += map(table_row, rows, views if views is not None else map(row_view, rows))
    return visible("\n".join(lines)) + "\n" + summary(report)


def run_line(report: ReportDict) -> str:
    """'Agent a:build; model m, embedder e, judge j (the offline backends); cases c@1, split dev.': the run a
    report is of, which opens it (two reports printed back to back each say theirs first)."""
    key = report["key"]
    agent = f"Agent {text(key['agent'])}; " if key.get("agent") else ""
    return (f"{agent}model {text(key['model'])}, embedder {text(key['embedder'])}, judge {text(key['judge'])}"
            f"{' (the offline backends)' if key.get('offline') else ''}; cases {text(key['cases'])}, "
            f"split {text(report.get('split', 'all'))}.")


def legend(report: ReportDict) -> str:
    """How the judged scores gate, with the thresholds the run used (a stage's own after the default): the
    same words in every rendering."""
    own, default = report.get("thresholds") or {}, report.get("threshold", gating.THRESHOLD)
    stated = f" ({'; '.join(f'{text(stage)} at {threshold(t)}' for stage, t in own.items())})" if own else ""
    binary = "" if default == gating.THRESHOLD else \
        f" Facts and the behaviour judgements score 1 or 0 and pass at {threshold(gating.THRESHOLD)}."
    return (f"\nA judged score passes at {threshold(default)} or more{stated}.{binary} A score marked FAIL in the "
            "table fails its stage. Ctx precision is reported, never gating; on a case expecting an abstention "
            "ctx recall and relevancy are reported, not gating. Facts is 1 when the answer states every expected "
            "fact, else 0; a case without expected facts, or expecting an abstention, is not graded on facts (-). The "
            "behaviour judgements (abstained, ignored_planted) gate the behaviour stage, beside its checks in code.")


def threshold(value: float) -> str:
    """A threshold as the reports state it: to 2 places, or every digit it has when it has more."""
    return f"{value:.2f}" if round(value, 2) == value else str(value)


def check_lines(found: Optional[dict]) -> list[str]:
    """The project's own checks (whichstage.project.checks), part of the behaviour stage: each one's passes."""
    if not found:
        return []
    return ["\nChecks in code (the project's `checks`, part of the behaviour stage): "
            + "; ".join(f"{code(spec)} {rate_text(r)}" for spec, r in found.items()) + "."]


def summary(report: ReportDict) -> str:
    """Everything under the stage table, as markdown: the legend, the rates with their intervals, the ladder,
    categories, repeats, counterfactuals, why each failing case failed, tokens and latency, calibration."""
    k, s = report["k"], report["summary"]
    lines = [legend(report)]
    faith = s["mean_faithfulness"]
    errors = (f" {cases(s['errors'])} errored and {'is' if s['errors'] == 1 else 'are'} not scored."
              if s["errors"] else "")
    share = rate_text(s["pass_rate"]).partition(" = ")[2] or "none scored"
    lines.append(f"\n{s['passed']}/{s['cases'] - s['errors']} cases pass every stage, "
                 f"{share}.{errors} Tools {s['tool_pass']}/{s['cases'] - s['errors']}, "
                 f"hit@{k} {at_k(s, 'hit', k)}, recall@{k} {at_k(s, 'recall', k)}, MRR {s['mrr']}, "
                 f"mean faithfulness {'-' if faith is None else faith}.")
    lines.append("\nPer stage: " + "; ".join(f"{stage} {rate_text(r)}" for stage, r in s["stages"].items()
                                              if r["total"]) + ".")
    lines += criteria_lines(report)
    lines += check_lines(s.get("checks"))
    ladder = s.get("ladder")
    if ladder and ladder.get("retriever"):
        ladder = {**ladder, "retriever": cell(ladder["retriever"])}  # the ladder's table names it in a cell
    lines += ladder_lines(ladder, cell(report["key"]["embedder"]))
    if s.get("categories"):
        lines += ["\nPer category (reported, never gated: a handful of cases each, so one flip moves tens of "
                  "points):\n", "| category | cases | passed | pass rate (95% CI) | most common first failure |",
                  "|---|---|---|---|---|"]
        lines += [f"| {cell(c)} | {r['total']} | {r['passed']} | {rate_text(r).partition(' = ')[2]} | "
                  f"{cell(r['top_failure'] or '-')} |" for c, r in s["categories"].items()]
    if s.get("repeats"):
        rep = s["repeats"]
        lines.append(f"\nRepeats: {rep['n']} runs per case; mean pass rate {rep['mean_pass_rate']:.0%}; "
                     f"pass^{rep['n']} (every run passes) {rate_text(rep['pass_all'])}.")
        lines += [f"- flaky {code(cid)}: passed {f['passes']}/{rep['n']}; flipped: "
                  f"{text(', '.join(f['flipped'])) or '-'}"
                  for cid, f in rep["flaky"].items()] or ["No case is flaky: each passed all its runs or none."]
    for kind, counts in s.get("counterfactual", {}).items():
        lines.append(f"\nCounterfactual ({kind}): of {cases(counts['fixed'] + counts['still_fails'])} failing at "
                     f"{kind}, {counts['fixed']} pass with {SUPPLIED} ({CAUSE} is the cause), "
                     f"{counts['still_fails']} pass {kind} with them and then fail at a later stage.")
    if report.get("held_out"):
        lines.append(f"\n{cases(report['held_out'])} held out and not shown: never tune on the cases you "
                     "report. See them with --split holdout, or every case with --split all.")
    failing = [r for r in report["rows"] if r["first_failure"]]
    if failing:
        lines.append("\nFirst failures:\n")
        for r in failing:
            lines.append(f"- {code(r['id'])} **{text(r['first_failure'])}**: {text(failure_reason(r))}")
            if r.get("diagnosis"):
                lines.append(f"  - diagnosis: {text(fix_list.diagnosis_line(r['diagnosis']))}")
    differ = [(r, verdict) for r in report["rows"] if (verdict := r.get("tools")) and deepeval_disagrees(verdict)]
    if differ:
        lines.append("\nDeepEval's ToolCorrectnessMetric lets identical calls (same tool, same arguments) meet one "
                     "expected entry between them, so it scored these cases differently from the harness's count, "
                     "which the tools stage uses: " + "; ".join(
                         f"{code(r['id'])} DeepEval {fmt(v['deepeval']['score'])}, harness "
                         f"{fmt(v['score'])} ({text(v['reason'])})" for r, v in differ) + ".")
    t, lat = s["tokens"], s["latency"]
    cost = "not reported by the providers" if s["cost"] is None else text(s["cost"])
    lines.append(f"\nTokens: agent {t['agent_in']} in / {t['agent_out']} out; judge {t['judge_in']} in / "
                 f"{t['judge_out']} out. Cost: {cost}.")
    lines.append(f"Latency: agent run p50 {seconds(lat['agent_p50_s'])}, p95 {seconds(lat['agent_p95_s'])}; "
                 f"judge metric p50 {seconds(lat['judge_p50_s'])}, p95 {seconds(lat['judge_p95_s'])}.")
    lines += calibration_lines(report.get("calibration"))
    lines += second_judge_lines(report.get("second_judge"))
    return visible("\n".join(lines))


def criteria_lines(report: ReportDict) -> list[str]:
    """The project's own criteria (evals.toml `[criteria.NAME]`), stages after the built-in ones: per case, each
    one's score and verdict at its threshold; nothing for a project that declares none."""
    rows = report["rows"]
    names = criteria_of(rows)
    if not names:
        return []
    thresholds = {name: next(r["criteria"][name] for r in rows if name in (r.get("criteria") or {}))
                  for name in names}
    lines = ["\nCriteria of the project (evals.toml), each a stage after the built-in ones: "
             + ", ".join(f"{code(n)} passes at {threshold(thresholds[n])}" for n in names) + ".\n",
             "| case | " + " | ".join(cell(n) for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    for r in rows:
        view = row_view(r).stages
        marks = [f"{view[n].mark} {fmt(view[n].score)}" if n in view and view[n].gates == n else "-"
                 for n in names]
        lines.append(f"| {cell(r['id'])} | " + " | ".join(marks) + " |")
    return lines


def calibration_lines(found: Optional[dict]) -> list[str]:
    """Whether the run's judge is calibrated (whichstage/run/calibration_status.py), in plain words, with each gating
    metric's agreement and kappa."""
    if not found:
        return []
    figures = "; ".join(f"{metric} {fmt_share(m['agreement'])}, kappa {fmt(m['kappa'])}"
                        for metric, m in (found.get("metrics") or {}).items())
    return [f"\n{text(found['why'])}" + (f" ({figures})." if figures else ".")]


def fmt_share(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.0%}"


def second_judge_lines(found: Optional[dict]) -> list[str]:
    """The report's lines on the second judge."""
    if not found:
        return []
    out = [f"\nSecond judge {found['second']} beside {found['first']}, on the same traces (agreement on pass or "
           "fail; kappa between the two):\n", "| stage | cases | agreement | kappa | split on |",
           "|---|---|---|---|---|"]
    for stage, s in found["stages"].items():
        share = "-" if s["agreement"] is None else f"{s['agreement']:.0%}"
        kappa = "-" if s["kappa"] is None else f"{s['kappa']:.2f}"
        split = ", ".join(f"{c['id']} ({score_text(c['first'])} / {score_text(c['second'])})" for c in s["split"][:5])
        more = f", and {len(s['split']) - 5} more" if len(s["split"]) > 5 else ""
        out.append(f"| {stage} | {s['cases']} | {share} | {kappa} | {split + more or '-'} |")
    return out


def score_text(score: Optional[float]) -> str:
    return "-" if score is None else f"{score:.2f}"

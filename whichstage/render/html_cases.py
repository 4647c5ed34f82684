"""The HTML page's stage table and its section per case: each stage's verdict, reason and threshold as
stage_view.row_view gives them, the calls, each search's documents, the answer and the reference. Pure."""
from typing import Optional, cast

from whichstage.render import fix_list
from whichstage.render.html_markup import ARGUMENTS, cell, escaped, listed, mark, num, verdict_class
from whichstage.render.markdown import threshold
from whichstage.render.row_view import FAIL, PASS, RowView, StageResult, below_cut, cut_line, cut_of, row_view
from whichstage.model.stages import SCORED, THRESHOLD, table_heads
from whichstage.scoring.tools import deepeval_disagrees
from whichstage.scoring.retrieval import ranked_documents
from whichstage.model.dicts import ReportDict, RowDict, ToolsDict



def ok_of(result: StageResult, gating: bool = True) -> Optional[bool]:
    """A stage result as a cell's colour: True or False where it gates (`gating`), None where it does not."""
    return {PASS: True, FAIL: False}.get(result.verdict) if gating else None


def _row(r: RowDict, view: RowView) -> str:
    ret, results = r.get("retrieval"), view.stages
    calls = r.get("calls") or [c.get("name") for c in r.get("tool_calls") or []]
    ret_ok, rid = ok_of(results["retrieval"]), escaped(r["id"])
    cells = [f'<td data-col="case"><a href="#case-{rid}">{rid}</a></td>',
             cell("calls", escaped(", ".join(map(str, calls)) or "none"), None),
             cell("behaviour", results["behaviour"].mark, ok_of(results["behaviour"])),
             cell("tools", results["tools"].mark, ok_of(results["tools"])),
             cell("hit", "-" if ret is None else ("yes" if ret.get("hit") else "NO"), ret_ok),
             cell("recall", num(ret and ret.get("recall")), ret_ok, True),
             cell("rr", num(ret and ret.get("reciprocal_rank")), ret_ok, True)]
    for m in SCORED:  # coloured only where the score gates: a metric that did not run, or only reports, is neutral
        result = results.get(m) or StageResult(m, "n/a")
        cells.append(cell(m, num(result.score), ok_of(result, result.gates == m), True))
    failure = view.first_failure
    text = escaped(failure or "-")
    if r.get("error"):
        text += f'<div class="error">{escaped(r["error"])}</div>'
    cells.append(cell("first_failure", text, not failure))
    return f'<tr id="row-{rid}">{"".join(cells)}</tr>'


def stage_table(report: ReportDict, views: Optional[list[RowView]] = None) -> str:
    """The stage table: a row per case, each cell coloured only where its verdict gates. `views`: the rows'
    row_view, when the caller has them."""
    k = report.get("k", "k")
    heads = table_heads(k)
    rows = report.get("rows", [])
    cells = "".join(_row(r, v) for r, v in zip(rows, views if views is not None else map(row_view, rows),
                                              strict=False))
    return (f'<table id="stages"><thead><tr>{"".join(f"<th>{escaped(h)}</th>" for h in heads)}</tr></thead>'
            f"<tbody>{cells}</tbody></table>")


def pages(r: RowDict) -> str:
    """Each search's documents as scored: its distinct pages in rank order, two chunks of one page once; where
    k cuts a search, a line, and the pages under it marked as not scored."""
    expected = list(r.get("expected_docs") or [])
    retrieved = list(r.get("retrieved") or [])
    searches = [s for s in r.get("searches", [retrieved]) if s]
    listing = "".join((f"<p>Search {n}:</p>" if len(searches) > 1 else "") + _documents(s, expected, cut_of(r))
                      for n, s in enumerate(searches, start=1)) or "<p>none retrieved</p>"
    missed = [f'<li class="missed">{escaped(p)} &#10007; missed</li>' for p in expected if p not in retrieved]
    return listing + (f"<p>Expected but not retrieved:</p><ul>{''.join(missed)}</ul>" if missed else "")


def _documents(ranked: list[str], expected: list[str], k: Optional[int]) -> str:
    found = ranked_documents(ranked)
    scored = found if k is None else found[:k]
    items = "".join(f'<li class="expected">{escaped(p + chunks)} &#10003; expected</li>' if p in expected
                    else f"<li>{escaped(p + chunks)}</li>" for p, chunks in scored)
    if k is None or len(scored) == len(found):  # no k: every document is scored
        return f"<ol>{items}</ol>"
    below = "".join(f'<li class="below-k missed">{escaped(p + chunks)} &#10007; {escaped(below_cut(k, True))}</li>'
                    if p in expected else f'<li class="below-k">{escaped(p + chunks)}</li>' for p, chunks in found[k:])
    return (f'<ol>{items}</ol><p class="cut">&#8212; {escaped(cut_line(k))} &#8212;</p>'
            f'<ol start="{k + 1}" class="below-k">{below}</ol>')


def _tool_section(r: RowDict, result: StageResult) -> str:
    calls = "".join(f"<li><code>{escaped(c.get('name'))}({escaped(ARGUMENTS(c.get('args', {})))})</code></li>"
                    for c in r.get("tool_calls") or [])
    t = r.get("tools")
    extra = "".join(f"<li>{name.replace('_', ' ')}: {listed(t.get(name))}</li>"
                    for name in ("unexpected", "missing", "wrong_args") if t and t.get(name))
    return (f"<h3>Tool calls</h3>{f'<ul>{calls}</ul>' if calls else '<p>none</p>'}"
            f'<p>Tool metric: <span class="{verdict_class(ok_of(result))}">{result.mark}</span>, '
            f"score {num(result.score)}</p>{f'<ul>{extra}</ul>' if extra else ''}"
            f"<pre>{escaped(result.reason)}</pre>{_deepeval_disagrees(t) if t else ''}")


def _deepeval_disagrees(t: ToolsDict) -> str:
    """DeepEval's own score and reason, where its matching differs from the harness's count."""
    if not deepeval_disagrees(t):
        return ""
    return (f"<p>DeepEval's ToolCorrectnessMetric disagrees: score {num(t['deepeval']['score'])} (identical calls, "
            "same tool and arguments, meet one expected entry between them; the stage uses the count above)</p>"
            f"<pre>{escaped(t['deepeval']['reason'])}</pre>")


def _behaviour(r: RowDict, result: StageResult) -> str:
    """The behaviour checks' verdict and each reason they failed, as the markdown's first failures give them."""
    b = r.get("behaviour")
    if b is None:
        return ""
    failures = "".join(f"<li>{escaped(f)}</li>" for f in b.get("failures") or [])
    return (f'<h3>Behaviour</h3><p>Behaviour checks: <span class="{verdict_class(ok_of(result))}">{result.mark}'
            f"</span></p>{f'<ul>{failures}</ul>' if failures else ''}{_checks(b.get('checks'))}")


def _checks(checks: Optional[list]) -> str:
    """The project's own checks (whichstage.project.checks) on this case: each one's verdict and reason."""
    if not checks:
        return ""
    rows = "".join(f'<tr><td><code>{escaped(c["check"])}</code></td><td class="{verdict_class(c["pass"])}">'
                   f'{mark(c["pass"])}</td><td>{escaped(c.get("reason") or "")}</td></tr>' for c in checks)
    return ('<table class="checks"><thead><tr><th>check</th><th>verdict</th><th>reason</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def judged_verdict(result: StageResult, default: float) -> str:
    """'pass', 'FAIL (gates behaviour)', 'FAIL (threshold 0.90)' where the threshold is not the report's
    `default`, or 'reported, not gating'."""
    if result.gates is None:
        return "reported, not gating"
    return (result.mark + ("" if result.gates == result.stage else f" (gates {result.gates})")
            # a judged metric that gates has its threshold (row_view): never None here
            + ("" if result.threshold == default else f" (threshold {threshold(cast(float, result.threshold))})"))


def _judged(r: RowDict, view: RowView, default: float) -> str:
    rows = []
    for m, v in (r.get("judged") or {}).items():
        result = view.stages[m]
        colour = verdict_class(ok_of(result, result.gates is not None))
        facts = "".join(f"<li>{'covered' if f.get('covered') else 'MISSING'}: {escaped(f.get('fact'))} "
                        f"({escaped(f.get('reason'))})</li>" for f in v.get("facts") or [])
        rows.append(f'<tr><td>{escaped(m)}</td><td class="{colour} num">{num(result.score)}</td>'
                    f'<td class="{colour}">{escaped(judged_verdict(result, default))}</td>'
                    f'<td>{escaped(result.reason)}{f"<ul>{facts}</ul>" if facts else ""}</td></tr>')
    if not rows:
        return "<h3>Judge</h3><p>no judged metrics</p>"
    return ("<h3>Judge</h3><table><thead><tr><th>metric</th><th>score</th><th>verdict</th><th>reason</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _why(r: RowDict, view: RowView) -> str:
    """The error, or the first failing stage's reason; then the counterfactual run's verdict, if any."""
    failure = view.first_failure
    if r.get("error"):
        why = f'<p class="error">Error: {escaped(r["error"])}</p>'
    elif failure and failure != "error":
        why = f'<p class="reason"><strong>Why:</strong> {escaped(view.stages[failure].reason)}</p>'
    else:
        why = ""
    cf = r.get("counterfactual") or {}  # a dict wherever the view has a counterfactual to word
    why += (f'<p class="counterfactual"><strong>Counterfactual ({escaped(cf.get("for") or "retrieval")}):'
            f"</strong> {escaped(view.counterfactual)}.</p>" if view.counterfactual else "")
    if cf.get("answer") is not None:
        why += f'<p class="counterfactual-answer"><strong>Its answer:</strong> {escaped(cf["answer"])}</p>'
    if r.get("diagnosis"):
        line = fix_list.diagnosis_line(r["diagnosis"])
        why += f'<p class="diagnosis"><strong>Diagnosis:</strong> {escaped(line)}</p>'
    if fix_list.recheck_line(r):
        why += f'<p class="recheck">{escaped(fix_list.recheck_line(r))}</p>'
    return why


def case_section(r: RowDict, default: float = THRESHOLD, view: Optional[RowView] = None) -> str:
    """A case in detail; `default` is the report's threshold, beside which a verdict judged against another
    says so; `view` its row_view, when the caller has it."""
    view = view or row_view(r)
    failure = view.first_failure
    badge = (f'<span class="badge fail">first failure: {escaped(failure)}</span>' if failure
             else '<span class="badge pass">passes every stage</span>')
    rid = escaped(r["id"])
    return (f'<section id="case-{rid}" class="case {"failed" if failure else "passed"}">'
            f"<h2>{rid}{badge}</h2>{_why(r, view)}"
            f'<h3>Question</h3><p class="text">{escaped(r.get("question", ""))}</p>'
            f"{_behaviour(r, view.stages['behaviour'])}{_tool_section(r, view.stages['tools'])}"
            f"<h3>Retrieved pages (rank order)</h3>{pages(r)}"
            f'<h3>Answer</h3><p class="text">{escaped(r.get("answer") or "")}</p>'
            f'<h3>Reference</h3><p class="text">{escaped(r.get("reference") or "")}</p>'
            f"{_judged(r, view, default)}</section>")

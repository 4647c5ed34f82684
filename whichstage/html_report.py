"""The evaluation report as one self-contained HTML page: summary, pictures, stage table and every case in
detail. The summary is the markdown report's own (whichstage/report.py), rendered here, so the page says what
the markdown says in the same words; a stage's verdict is coloured only where it gates.

Pure: `html(report)` returns the page; it loads nothing from the network (no external CSS, JS or fonts). The
pictures are inline SVG drawn here (a stage funnel, pass rates with their Wilson intervals per stage and per
category, and the counterfactual runs' verdicts when the report has them); every number in them is also
text, and the tables below say everything without them.
"""
import functools
from html import escape
from typing import Any, Iterator, Optional

from whichstage import json_text
from whichstage.console import visible
from whichstage.report import gate_of, run_line, summary, threshold
from whichstage.stages import STAGES, THRESHOLD, deepeval_disagrees, passes, ranked_documents, stage_order, \
    stage_results, threshold_of
from whichstage.stats import rate_text, wilson_interval

JUDGED = ("contextual_precision", "faithfulness", "contextual_recall", "answer_relevancy", "facts")

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1300px;
       padding: 0 1rem; color: #1d1d1f; background: #fff; }
h1 { font-size: 1.5rem; margin-bottom: .3rem; }
h2 { font-size: 1.15rem; margin: 0 0 .6rem; }
h3 { font-size: .95rem; margin: .9rem 0 .3rem; color: #444; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; }
th, td { border: 1px solid #d0d0d0; padding: .3rem .55rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { background: #dcf5dc; }
.fail { background: #fbd5d5; font-weight: 600; }
.neutral { background: #f7f7f7; color: #555; }
.summary { max-width: 62rem; }
.summary p { margin: .5rem 0; }
.case { border: 1px solid #d0d0d0; border-radius: 6px; padding: .8rem 1.1rem; margin: 1rem 0; }
.case.failed { border-left: 6px solid #d33; }
.case.passed { border-left: 6px solid #3a3; }
.text { white-space: pre-wrap; background: #fafafa; border-left: 3px solid #ccc; padding: .4rem .7rem; margin: 0; }
pre { white-space: pre-wrap; tab-size: 2; font-size: .85rem; margin: .2rem 0; }
code { font-size: .9em; }
li.expected { font-weight: 600; color: #176117; }
li.missed { color: #a11; font-weight: 600; }
.error { color: #a11; white-space: pre-wrap; }
.badge { font-size: .8rem; padding: .1rem .5rem; border-radius: 4px; margin-left: .5rem; vertical-align: middle; }
"""


ARGUMENTS = json_text.encoder(ensure_ascii=False, default=str)  # a call's arguments as the page shows them


def escaped(value: Any) -> str:
    """Any value as HTML text, quotes included, control characters shown escaped (console.visible): every
    value the pages show goes through it."""
    text = visible(value if type(value) is str else str(value))
    special = "&" in text or "<" in text or ">" in text or '"' in text or "'" in text  # what escape replaces
    return escape(text, quote=True) if special else text


def _num(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def _verdict(ok: Optional[bool]) -> str:
    return "neutral" if ok is None else ("pass" if ok else "fail")


def _cell(col: str, text: str, ok: Optional[bool], num: bool = False) -> str:
    return f'<td data-col="{col}" class="{_verdict(ok)}{" num" if num else ""}">{text}</td>'


def _value(v: Any) -> str:
    """A tool verdict's list (missing, unexpected, wrong arguments) as escaped text."""
    if isinstance(v, (list, tuple)):
        return ", ".join(escaped(x) for x in v) or "-"
    return escaped(v)


# The markdown summary as HTML: its tables, lists, code and emphasis. The markdown escapes every outside text
# and writes a line break as <br>; any other HTML, and any link or image (which could fetch), shows as text.
# Built on first use: compare.py imports this module for its CSS and escaping alone.
@functools.cache
def markdown():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table").disable(["image", "link", "autolink", "reference"])
    md.add_render_rule("html_inline", lambda tokens, i, *_: "<br>" if tokens[i].content == "<br>"
                       else escape(tokens[i].content))
    md.add_render_rule("html_block", lambda tokens, i, *_: f"<p>{escape(tokens[i].content)}</p>")
    return md


def _summary(report: dict) -> str:
    """The markdown report's summary, in the same words; nothing for a report without one."""
    if not report.get("summary"):
        return ""
    return f'<div class="summary">{markdown().render(summary(report))}</div>'


def _row(r: dict) -> str:
    tools, ret, judged, results = r.get("tools") or {}, r.get("retrieval"), r.get("judged") or {}, stage_results(r)
    calls = r.get("calls") or [c.get("name") for c in r.get("tool_calls") or []]
    behaviour, ret_ok = r.get("behaviour"), results.get("retrieval")
    tools_ok, rid = tools.get("pass"), escaped(r["id"])
    cells = [f'<td data-col="case"><a href="#case-{rid}">{rid}</a></td>',
             _cell("calls", escaped(", ".join(map(str, calls)) or "none"), None),
             _cell("behaviour", _mark(results.get("behaviour")), results.get("behaviour")),
             _cell("tools", _mark(tools_ok), tools_ok),
             _cell("hit", "-" if ret is None else ("yes" if ret.get("hit") else "NO"), ret_ok),
             _cell("recall", _num(ret and ret.get("recall")), ret_ok, True),
             _cell("rr", _num(ret and ret.get("reciprocal_rank")), ret_ok, True)]
    for m in JUDGED:  # coloured only where the score gates: a metric that did not run, or only reports, is neutral
        score = judged[m].get("score") if m in judged else None
        cells.append(_cell(m, _num(score), results.get(m) if gate_of(r, m) == m else None, True))
    failure = r.get("first_failure")
    text = escaped(failure or "-")
    if r.get("error"):
        text += f'<div class="error">{escaped(r["error"])}</div>'
    cells.append(_cell("first_failure", text, not failure))
    return f'<tr id="row-{rid}">{"".join(cells)}</tr>'


def _mark(ok: Optional[bool]) -> str:
    return "-" if ok is None else ("pass" if ok else "FAIL")


def _table(report: dict) -> str:
    k = report.get("k", "k")
    heads = ["case", "tools called", "behaviour", "tools", f"hit@{k}", f"recall@{k}", "RR", "ctx precision",
             "faithful", "ctx recall", "relevancy", "facts", "first failure"]
    rows = "".join(_row(r) for r in report.get("rows", []))
    return (f'<table id="stages"><thead><tr>{"".join(f"<th>{escaped(h)}</th>" for h in heads)}</tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _pages(r: dict) -> str:
    """Each search's documents as scored: its distinct pages in rank order, two chunks of one page once."""
    expected = list(r.get("expected_docs") or [])
    retrieved = list(r.get("retrieved") or [])
    searches = [s for s in r.get("searches", [retrieved]) if s]
    listing = "".join((f"<p>Search {n}:</p>" if len(searches) > 1 else "") + f"<ol>{_documents(s, expected)}</ol>"
                      for n, s in enumerate(searches, start=1)) or "<p>none retrieved</p>"
    missed = [f'<li class="missed">{escaped(p)} &#10007; missed</li>' for p in expected if p not in retrieved]
    return listing + (f"<p>Expected but not retrieved:</p><ul>{''.join(missed)}</ul>" if missed else "")


def _documents(ranked: list[str], expected: list[str]) -> str:
    return "".join(f'<li class="expected">{escaped(p + chunks)} &#10003; expected</li>' if p in expected
                   else f"<li>{escaped(p + chunks)}</li>" for p, chunks in ranked_documents(ranked))


def _tool_section(r: dict) -> str:
    calls = r.get("tool_calls") or []
    listed = "".join(f"<li><code>{escaped(c.get('name'))}"
                     f"({escaped(ARGUMENTS(c.get('args', {})))})</code></li>"
                     for c in calls)
    t = r.get("tools") or {}
    extra = "".join(f"<li>{name.replace('_', ' ')}: {_value(t[name])}</li>"
                    for name in ("unexpected", "missing", "wrong_args") if t.get(name))
    verdict = "" if t.get("pass") is None else ("pass" if t["pass"] else "FAIL")
    return (f"<h3>Tool calls</h3>{f'<ul>{listed}</ul>' if listed else '<p>none</p>'}"
            f'<p>Tool metric: <span class="{_verdict(t.get("pass"))}">{verdict or "-"}</span>, '
            f"score {_num(t.get('score'))}</p>{f'<ul>{extra}</ul>' if extra else ''}"
            f"<pre>{escaped(t.get('reason') or '')}</pre>{_deepeval_disagrees(t)}")


def _deepeval_disagrees(t: dict) -> str:
    """DeepEval's own score and reason, where its matching differs from the harness's count."""
    if not deepeval_disagrees(t):
        return ""
    return (f"<p>DeepEval's ToolCorrectnessMetric disagrees: score {_num(t['deepeval']['score'])} (identical calls, "
            "same tool and arguments, meet one expected entry between them; the stage uses the count above)</p>"
            f"<pre>{escaped(t['deepeval']['reason'])}</pre>")


def _behaviour(r: dict) -> str:
    """The behaviour checks' verdict and each reason they failed, as the markdown's first failures give them."""
    b = r.get("behaviour")
    if b is None:
        return ""
    failures = "".join(f"<li>{escaped(f)}</li>" for f in b.get("failures") or [])
    return (f'<h3>Behaviour</h3><p>Behaviour checks: <span class="{_verdict(b["pass"])}">{_mark(b["pass"])}'
            f"</span></p>{f'<ul>{failures}</ul>' if failures else ''}{_checks(b.get('checks'))}")


def _checks(checks: Optional[list]) -> str:
    """The project's own checks (whichstage.checks) on this case: each one's verdict and reason."""
    if not checks:
        return ""
    rows = "".join(f'<tr><td><code>{escaped(c["check"])}</code></td><td class="{_verdict(c["pass"])}">'
                   f'{_mark(c["pass"])}</td><td>{escaped(c.get("reason") or "")}</td></tr>' for c in checks)
    return ('<table class="checks"><thead><tr><th>check</th><th>verdict</th><th>reason</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _judged(r: dict) -> str:
    rows = []
    for m, v in (r.get("judged") or {}).items():
        score, gate = v.get("score"), gate_of(r, m)
        ok = None if gate is None else passes(score, threshold_of(r, m))
        verdict = "reported, not gating" if gate is None else f"{_mark(ok)}" + ("" if gate == m else
                                                                                  f" (gates {gate})")
        if gate is not None and threshold_of(r, m) != THRESHOLD:
            verdict += f" (threshold {threshold(threshold_of(r, m))})"
        facts = "".join(f"<li>{'covered' if f.get('covered') else 'MISSING'}: {escaped(f.get('fact'))} "
                        f"({escaped(f.get('reason'))})</li>" for f in v.get("facts") or [])
        rows.append(f'<tr><td>{escaped(m)}</td><td class="{_verdict(ok)} num">{_num(score)}</td>'
                    f'<td class="{_verdict(ok)}">{escaped(verdict)}</td><td>{escaped(v.get("reason") or "")}'
                    f'{f"<ul>{facts}</ul>" if facts else ""}</td></tr>')
    if not rows:
        return "<h3>Judge</h3><p>no judged metrics</p>"
    return ("<h3>Judge</h3><table><thead><tr><th>metric</th><th>score</th><th>verdict</th><th>reason</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _case(r: dict) -> str:
    failure = r.get("first_failure")
    badge = (f'<span class="badge fail">first failure: {escaped(failure)}</span>' if failure
             else '<span class="badge pass">passes every stage</span>')
    error = f'<p class="error">Error: {escaped(r["error"])}</p>' if r.get("error") else ""
    cf = r.get("counterfactual")
    rerun = (f'<p class="counterfactual"><strong>Counterfactual ({escaped(cf.get("for") or "retrieval")}):</strong> '
             f"{escaped(counterfactual_verdict(cf))}.</p>") if isinstance(cf, dict) else ""
    rid = escaped(r["id"])
    return (f'<section id="case-{rid}" class="case {"failed" if failure else "passed"}">'
            f"<h2>{rid}{badge}</h2>{error}{rerun}"
            f'<h3>Question</h3><p class="text">{escaped(r.get("question", ""))}</p>'
            f"{_behaviour(r)}{_tool_section(r)}<h3>Retrieved pages (rank order)</h3>{_pages(r)}"
            f'<h3>Answer</h3><p class="text">{escaped(r.get("answer") or "")}</p>'
            f'<h3>Reference</h3><p class="text">{escaped(r.get("reference") or "")}</p>'
            f"{_judged(r)}</section>")


# ---- pictures: inline SVG, drawn here, nothing fetched ---------------------------------------------------

# Okabe-Ito blue and vermilion: told apart in every common colour-vision deficiency, and the failing part is
# also hatched. Against white: PASS 5.2:1, FAIL 3.9:1, the outline of a RATE_FILL bar 5.2:1, text 16:1.
PASS, FAIL, RATE_FILL, TRACK, INK, MUTED = "#0072B2", "#D55E00", "#56B4E9", "#eeeeee", "#1d1d1f", "#555555"
LABEL_W, BAR_W, GAP, TEXT_W, ROW_H = 190, 340, 12, 300, 26
WIDTH = LABEL_W + BAR_W + GAP + TEXT_W
# per kind of counterfactual run: what it supplied, and what a fix then blames
SUPPLIED = {"retrieval": ("the expected pages", "the retriever"),
            "tools": ("the expected tool calls", "the tool choice")}

FUNNEL_CAPTION = (
    "In stage order, the order in which the first failure is named. Only scored cases count ({errors} left "
    "out). A case <em>enters</em> a stage when the stage applies to it (behaviour only to cases with a "
    "behaviour check, retrieval only to cases that expect pages, each judged stage only where the judge "
    "scored it and an abstention does not exempt it) and it passed every earlier stage that applied to it; "
    "it <em>passes</em> when it passes this stage too. So the cases failing at a stage (hatched) are exactly "
    "those whose first failure is that stage, and a stage can admit more cases than the one before it "
    "passed: cases that the earlier stage did not apply to join here. Bar length is the number entering, on "
    "a scale of all scored cases; solid blue passes, hatched vermilion fails.")
STAGE_CAPTION = (
    "Per stage, over the scored cases the stage applies to (every case it measured, also those that failed "
    "an earlier stage), and overall (every stage passed): the bar is the exact pass rate, the whisker its 95% "
    "Wilson interval computed from the counts; only the label is rounded.")
CATEGORY_CAPTION = (
    "Per category, a case passing when it passes every stage; bar and whisker as above. Categories are "
    "reported, never gated: a category of a handful of cases moves tens of points on one flip, so no "
    "baseline check reads them.")
COUNTERFACTUAL_CAPTION = (
    "Each case whose first failure was {kinds} was run again by the same agent with its input at that stage "
    "made right: for retrieval, a search tool returning the case's expected pages{tools}. <em>Fixed</em> "
    "(solid blue): it then passes, so that stage is the cause. <em>Still fails</em> (hatched vermilion): it "
    "fails even so, so a later stage fails too (for retrieval: the generator). Bar length is the number of "
    "cases run again.")


def _f(x: float) -> str:
    """An SVG coordinate, rounded for drawing only."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _short(name: str, limit: int = 26) -> str:
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _svg(fig: str, title: str, desc: str, height: float, inner: str) -> str:
    """An inline SVG labelled by its <title> and <desc>, with the hatch its failing bars use."""
    return (f'<svg id="{fig}" class="chart" role="img" aria-labelledby="{fig}-title {fig}-desc" '
            f'viewBox="0 0 {WIDTH} {_f(height)}" width="{WIDTH}" height="{_f(height)}">'
            f'<title id="{fig}-title">{escaped(title)}</title><desc id="{fig}-desc">{escaped(desc)}</desc>'
            f'<defs><pattern id="{fig}-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{FAIL}"/>'
            f'<rect width="2" height="6" fill="#ffffff" fill-opacity="0.55"/></pattern></defs>{inner}</svg>')


def _row_start(y: float, name: str, attrs: str = "") -> str:
    """A row's group, its name at the left (cut short when long, whole in its tooltip) and its empty track."""
    return (f"<g{attrs}>"
            f'<text x="{LABEL_W - 8}" y="{_f(y + ROW_H / 2 + 4)}" text-anchor="end" fill="{INK}">'
            f"<title>{escaped(name)}</title>{escaped(_short(name))}</text>"
            f'<rect x="{LABEL_W}" y="{_f(y + 4)}" width="{BAR_W}" height="{ROW_H - 8}" fill="{TRACK}"/>')


def _bar(cls: str, y: float, x: float, width: float, fill: str, tip: str, extra: str = "") -> str:
    return (f'<rect class="{cls}" x="{_f(x)}" y="{_f(y + 4)}" width="{_f(width)}" height="{ROW_H - 8}" '
            f'fill="{fill}"{extra}><title>{escaped(tip)}</title></rect>') if width else ""


def _note(y: float, text: str) -> str:
    """The row's numbers as text at the right: the picture never carries them by colour alone."""
    return (f'<text class="value" x="{LABEL_W + BAR_W + GAP}" y="{_f(y + ROW_H / 2 + 4)}" fill="{INK}">'
            f"{escaped(text)}</text>")


def _axis(top: float, y: float, ticks: list[tuple[float, str]]) -> str:
    """Grid lines from `top` down to `y`, labelled under it; a tick is a share of the bar width."""
    return "".join(f'<line x1="{_f(LABEL_W + share * BAR_W)}" y1="{_f(top)}" x2="{_f(LABEL_W + share * BAR_W)}" '
                   f'y2="{_f(y)}" stroke="#c8c8c8"/><text x="{_f(LABEL_W + share * BAR_W)}" y="{_f(y + 14)}" '
                   f'text-anchor="middle" fill="{MUTED}" font-size="11">{escaped(text)}</text>' for share, text in ticks)


def _figure(heading: str, svg: str, caption: str, extra: str = "") -> str:
    """Its visible heading, the picture, the caption defining what it shows, then any table or list."""
    return (f'<figure class="chart"><h3>{escaped(heading)}</h3>{svg}<figcaption>{caption}</figcaption>{extra}'
            "</figure>")


def _scored(report: dict) -> list[dict]:
    return [r for r in report.get("rows", []) if not r.get("error") and r.get("first_failure") != "error"]


def funnel(report: dict) -> list[dict]:
    """Per stage in gating order (stages.stage_order: STAGES, then the project's criteria), of the scored (not
    errored) cases: how many enter it (it applies to them and they passed every earlier stage that applied to
    them) and how many of those pass it. A case fails at the stage its first failure names, so entering -
    passing is that stage's first-failure count."""
    cases = [(r.get("first_failure"), set(stage_results(r)) | {r.get("first_failure")}) for r in _scored(report)]
    steps = []
    order = stage_order(report.get("rows", []))
    for i, stage in enumerate(order):
        earlier = order[:i]
        entering = [failure for failure, applies in cases if stage in applies and failure not in earlier]
        steps.append({"stage": stage, "entering": len(entering),
                      "passing": sum(failure != stage for failure in entering)})
    return steps


def _funnel_figure(report: dict) -> str:
    scored = _scored(report)
    n, steps = len(scored), funnel(report)
    if not n:
        return ""
    through = sum(r.get("first_failure") is None for r in scored)
    y, rows = 8, []
    for s in steps:
        name, failed = s["stage"].replace("_", " "), s["entering"] - s["passing"]
        pass_w = s["passing"] / n * BAR_W
        rows.append(_row_start(y, name, f' class="step" data-stage="{s["stage"]}" data-entering="{s["entering"]}"'
                                        f' data-passing="{s["passing"]}"')
                    + _bar("pass", y, LABEL_W, pass_w, PASS, f"{name}: {s['passing']} pass")
                    + _bar("fail", y, LABEL_W + pass_w, failed / n * BAR_W, "url(#funnel-hatch)",
                           f"{name}: {failed} fail here", ' stroke="#ffffff"')
                    + _note(y, f"{s['entering']} enter, {s['passing']} pass" + (f", {failed} fail" if failed else ""))
                    + "</g>")
        y += ROW_H
    rows.append(_row_start(y, "every stage", f' class="through" data-passing="{through}"')
                + _bar("pass", y, LABEL_W, through / n * BAR_W, PASS, f"{through} pass every stage")
                + _note(y, f"{through} of {n} pass every stage") + "</g>")
    y += ROW_H
    desc = (f"Of {n} scored cases: " + "; ".join(f"{s['stage'].replace('_', ' ')} {s['entering']} enter, "
                                                f"{s['passing']} pass" for s in steps)
            + f"; {through} pass every stage.")
    svg = _svg("funnel", "Stage funnel: cases entering and passing each stage", desc, y + 22,
               _axis(8, y, [(0, "0"), (n // 2 / n, str(n // 2)), (1, f"{n} scored")]) + "".join(rows))
    table = ('<details><summary>The funnel as a table</summary><table class="funnel"><thead><tr><th>stage</th>'
             "<th>enter</th><th>pass</th><th>fail here</th></tr></thead><tbody>"
             + "".join(f'<tr><td>{escaped(s["stage"])}</td><td class="num">{s["entering"]}</td><td class="num">'
                       f'{s["passing"]}</td><td class="num">{s["entering"] - s["passing"]}</td></tr>' for s in steps)
             + "</tbody></table></details>")
    errors = len(report.get("rows", [])) - n
    left_out = f"{errors} errored case" + (" is" if errors == 1 else "s are")
    return _figure("Stage funnel", svg, FUNNEL_CAPTION.format(errors=left_out), table)


def _rate_figure(fig: str, heading: str, title: str, rates: list[tuple[str, dict]], caption: str) -> str:
    """One row per rate: a bar to the exact pass rate, a whisker across its 95% Wilson interval (the exact
    bounds are in data-low and data-high), and rate_text's label."""
    rates = [(name, r) for name, r in rates if isinstance(r, dict) and "passed" in r and "total" in r]
    if not rates:
        return ""
    y, rows = 8, []
    for name, r in rates:
        passed, total = r["passed"], r["total"]
        rows.append(_row_start(y, name, f' class="rate-row" data-name="{escaped(name)}"'))
        if total:
            low, high = wilson_interval(passed, total)
            mid, x1, x2 = y + ROW_H / 2, LABEL_W + low * BAR_W, LABEL_W + high * BAR_W
            rows.append(_bar("rate", y, LABEL_W, passed / total * BAR_W, RATE_FILL, f"{name}: {rate_text(r)}",
                             f' stroke="{PASS}"')
                        + f'<path class="whisker" data-low="{low!r}" data-high="{high!r}" stroke="#111111" '
                        f'stroke-width="2" fill="none" d="M{_f(x1)} {_f(mid)}H{_f(x2)}M{_f(x1)} {_f(mid - 6)}'
                        f'V{_f(mid + 6)}M{_f(x2)} {_f(mid - 6)}V{_f(mid + 6)}"><title>95% Wilson interval '
                        f"{low:.1%}-{high:.1%}</title></path>")
        rows.append(_note(y, rate_text(r) if total else "not measured (0 cases)") + "</g>")
        y += ROW_H
    svg = _svg(fig, title, "; ".join(f"{name}: {rate_text(r)}" for name, r in rates), y + 22,
               _axis(8, y, [(q, f"{q:.0%}") for q in (0, 0.25, 0.5, 0.75, 1)]) + "".join(rows))
    return _figure(heading, svg, caption)


def _stage_rates(report: dict) -> str:
    s = report.get("summary") or {}
    stages = s.get("stages") if isinstance(s.get("stages"), dict) else {}
    rates = ([("every stage", s["pass_rate"])] if isinstance(s.get("pass_rate"), dict) else []) + \
        [(stage.replace("_", " "), stages[stage]) for stage in stage_order(report.get("rows", [])) if stage in stages]
    return _rate_figure("stage-rates", "Pass rate per stage", "Pass rate per stage with its 95% Wilson interval",
                        rates, STAGE_CAPTION)


def _category_rates(report: dict) -> str:
    categories = (report.get("summary") or {}).get("categories")
    if not isinstance(categories, dict):
        return ""
    return _rate_figure("category-rates", "Pass rate per category (reported, never gated)",
                        "Pass rate per category with its 95% Wilson interval; never gated",
                        [(str(name), r) for name, r in categories.items()], CATEGORY_CAPTION)


def counterfactual_verdict(cf: dict) -> str:
    """One line on a case's counterfactual run: 'fixed with the expected pages: the retriever is the cause',
    or 'still fails at faithfulness with the expected pages: the generator fails too'."""
    kind = str(cf.get("for") or "retrieval")
    if cf.get("available") is False:
        return str(cf.get("why") or "counterfactual not available")
    supplied, cause = SUPPLIED.get(kind, (f"the expected {kind}", f"the {kind} stage"))
    stage = cf.get("first_failure")
    if cf.get("fixed"):
        return f"fixed with {supplied}: {cause} is the cause"
    if stage == "error":
        return f"the run with {supplied} did not complete: no verdict"
    return (f"still fails{f' at {stage}' if stage else ''} with {supplied}: "
            + ("the generator fails too" if kind == "retrieval" else f"{cause} is not the only cause"))


def _counterfactuals(report: dict) -> dict[str, dict]:
    """Per kind: the fixed and still-failing counts (the summary's when it has them, else counted from the
    rows) and the ids of the rows that are each."""
    found: dict[str, dict] = {}
    for r in report.get("rows", []):
        cf = r.get("counterfactual")
        if isinstance(cf, dict) and cf.get("available") is not False:
            kind, fixed = str(cf.get("for") or "retrieval"), bool(cf.get("fixed"))
            entry = found.setdefault(kind, {"fixed": 0, "still_fails": 0, "fixed_ids": [], "still_ids": []})
            entry["fixed" if fixed else "still_fails"] += 1
            entry["fixed_ids" if fixed else "still_ids"].append(str(r.get("id")))
    summary = (report.get("summary") or {}).get("counterfactual")
    for kind, counts in (summary.items() if isinstance(summary, dict) else ()):
        if isinstance(counts, dict):
            entry = found.setdefault(str(kind), {"fixed_ids": [], "still_ids": []})
            entry.update(fixed=int(counts.get("fixed") or 0), still_fails=int(counts.get("still_fails") or 0))
    order = sorted(found, key=lambda kind: (STAGES.index(kind) if kind in STAGES else len(STAGES), kind))
    return {kind: found[kind] for kind in order if found[kind]["fixed"] + found[kind]["still_fails"]}


def _counterfactual_figure(report: dict) -> str:
    kinds = _counterfactuals(report)
    if not kinds:
        return ""
    most = max(v["fixed"] + v["still_fails"] for v in kinds.values())
    y, rows, lists = 8, [], []
    for kind, v in kinds.items():
        fixed, still = v["fixed"], v["still_fails"]
        fixed_w = fixed / most * BAR_W
        rows.append(_row_start(y, kind.replace("_", " "), f' class="cf-row" data-kind="{escaped(kind)}" '
                                                          f'data-fixed="{fixed}" data-still-fails="{still}"')
                    + _bar("cf-fixed", y, LABEL_W, fixed_w, PASS, "fixed: " + (", ".join(v["fixed_ids"]) or str(fixed)))
                    + _bar("cf-still", y, LABEL_W + fixed_w, still / most * BAR_W, "url(#counterfactual-hatch)",
                           "still fails: " + (", ".join(v["still_ids"]) or str(still)), ' stroke="#ffffff"')
                    + _note(y, f"{fixed} fixed, {still} still fail{'s' if still == 1 else ''} (of {fixed + still})")
                    + "</g>")
        links = [f"{label}: " + (", ".join(f'<a href="#case-{escaped(i)}">{escaped(i)}</a>' for i in ids) or "none")
                 for label, ids in (("fixed", v["fixed_ids"]), ("still fails", v["still_ids"]))]
        lists.append(f"<li>{escaped(kind)}: {'; '.join(links)}</li>")
        y += ROW_H
    desc = "; ".join(f"{kind}: {v['fixed']} fixed, {v['still_fails']} still failing" for kind, v in kinds.items())
    svg = _svg("counterfactual", "Counterfactual runs: fixed with the expected input, or still failing", desc,
               y + 8, "".join(rows))
    others = [k for k in kinds if k != "retrieval"]
    caption = COUNTERFACTUAL_CAPTION.format(
        kinds=" or ".join(escaped(k) for k in ["retrieval", *others]),
        tools="; for tools, the expected tool calls" if "tools" in others else "")
    return _figure("Counterfactual runs", svg, caption, f"<ul>{''.join(lists)}</ul>")


FIGURE_CSS = """
figure.chart { margin: .8rem 0 1.6rem; }
svg.chart { display: block; max-width: 100%; height: auto;
            font: 13px system-ui, -apple-system, "Segoe UI", sans-serif; }
svg.chart text.value { font-variant-numeric: tabular-nums; }
figcaption { font-size: .85rem; color: #444; max-width: 62rem; margin-top: .3rem; }
figure.chart details, figure.chart ul { font-size: .85rem; margin: .3rem 0; }
p.counterfactual { margin: .3rem 0; }
"""


def _pictures(report: dict) -> str:
    """The figures, between the summary and the stage table; the tables say everything without them."""
    figures = _funnel_figure(report) + _stage_rates(report) + _category_rates(report) + \
        _counterfactual_figure(report)
    return f'<h2>Pictures</h2><div id="pictures">{figures}</div>' if figures else ""


def html(report: dict) -> str:
    """The whole report as one HTML page with inline CSS and no external resources."""
    return "".join(html_parts(report))


def html_parts(report: dict) -> Iterator[str]:
    """The page of `html`, a piece at a time (a case each), so a report of many cases is written without
    being held whole."""
    key = report.get("key") or {}
    agent = f"Agent {key['agent']}: " if key.get("agent") else ""
    title = (f"{agent}model {key.get('model', '?')}, embedder {key.get('embedder', '?')}, judge {key.get('judge', '?')}"
             f"{' (the offline backends)' if key.get('offline') else ''}")
    run = f"<p>{markdown().renderInline(visible(run_line(report)))}</p>" if "cases" in key else ""
    yield ("<!DOCTYPE html>\n"
           f'<html lang="en"><head><meta charset="utf-8"><title>{escaped(title)}</title>'
           f"<style>{CSS}{FIGURE_CSS}</style></head><body><h1>{escaped(title)}</h1>{run}{_summary(report)}"
           f"{_pictures(report)}<h2>Stages</h2>{_table(report)}<h2>Cases</h2>")
    for r in report.get("rows", []):
        yield _case(r)
    yield "</body></html>\n"

"""The evaluation report as one self-contained HTML page: summary, stage table and every case in detail.

Pure: `html(report)` returns the page; it loads nothing from the network (no external CSS, JS or fonts).
"""
import json
from html import escape
from typing import Any, Optional

from stages import deepeval_disagrees
from stats import rate_text

JUDGED = ("contextual_precision", "faithfulness", "contextual_recall", "answer_relevancy")
# contextual precision is reported, never gating: its cells stay neutral.
GATING = ("faithfulness", "contextual_recall", "answer_relevancy")

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
.summary dt { font-weight: 600; float: left; clear: left; width: 15rem; }
.summary dd { margin: 0 0 .2rem 15.5rem; }
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


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _num(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def _verdict(ok: Optional[bool]) -> str:
    return "neutral" if ok is None else ("pass" if ok else "fail")


def _cell(col: str, text: str, ok: Optional[bool], num: bool = False) -> str:
    return f'<td data-col="{col}" class="{_verdict(ok)}{" num" if num else ""}">{text}</td>'


def _labelled(key: str, value: Any) -> str:
    """'agent p50 0.04 s' for a timing field `agent_p50_s`; 'key value' otherwise."""
    if str(key).endswith("_s") and isinstance(value, (int, float)):
        return f"{_e(str(key)[:-2].replace('_', ' '))} {value:.2f} s"
    return f"{_e(str(key).replace('_', ' '))} {_value(value)}"


def _value(v: Any) -> str:
    """Any summary value as escaped text: rates with their interval, dicts as 'key value' pairs."""
    if v is None:
        return "-"
    if isinstance(v, dict):
        if "passed" in v and "total" in v:
            return _e(rate_text(v))
        sep = "<br>" if any(isinstance(x, dict) for x in v.values()) else "; "
        return sep.join(_labelled(k, x) for k, x in v.items()) or "-"
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v) or "-"
    return _e(v)


def _summary(report: dict) -> str:
    s = report.get("summary") or {}
    passed = rate_text(s["pass_rate"]) if isinstance(s.get("pass_rate"), dict) else (
        f"{s['passed']}/{s['cases']}" if "passed" in s and "cases" in s else None)
    head = f"<p><strong>{_e(passed)} cases pass every stage.</strong></p>" if passed else ""
    items = "".join(f"<dt>{_e(str(k).replace('_', ' '))}</dt><dd>{_value(v)}</dd>" for k, v in s.items())
    return f'{head}<dl class="summary">{items}</dl><div style="clear:both"></div>'


def _row(r: dict, threshold: float) -> str:
    tools, ret, judged = r.get("tools") or {}, r.get("retrieval"), r.get("judged") or {}
    calls = r.get("calls") or [c.get("name") for c in r.get("tool_calls") or []]
    ret_ok = None if ret is None else ret.get("recall") == 1.0
    tools_ok = tools.get("pass")
    cells = [f'<td data-col="case"><a href="#case-{_e(r["id"])}">{_e(r["id"])}</a></td>',
             _cell("calls", _e(", ".join(map(str, calls)) or "none"), None),
             _cell("tools", "-" if tools_ok is None else ("pass" if tools_ok else "FAIL"), tools_ok),
             _cell("hit", "-" if ret is None else ("yes" if ret.get("hit") else "NO"), ret_ok),
             _cell("recall", _num(ret and ret.get("recall")), ret_ok, True),
             _cell("rr", _num(ret and ret.get("reciprocal_rank")), ret_ok, True)]
    for m in JUDGED:
        score = judged[m].get("score") if m in judged else None
        # a metric that did not run for this case (no context) is skipped, not failed
        ok = None if m not in judged or m not in GATING else score is not None and score >= threshold
        cells.append(_cell(m, _num(score), ok, True))
    failure = r.get("first_failure")
    text = _e(failure or "-")
    if r.get("error"):
        text += f'<div class="error">{_e(r["error"])}</div>'
    cells.append(_cell("first_failure", text, not failure))
    return f'<tr id="row-{_e(r["id"])}">{"".join(cells)}</tr>'


def _table(report: dict) -> str:
    k = report.get("k", "k")
    heads = ["case", "tools called", "tools", f"hit@{k}", f"recall@{k}", "RR", "ctx precision", "faithful",
             "ctx recall", "relevancy", "first failure"]
    rows = "".join(_row(r, report.get("threshold", 0.7)) for r in report.get("rows", []))
    return (f'<table id="stages"><thead><tr>{"".join(f"<th>{_e(h)}</th>" for h in heads)}</tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _pages(r: dict) -> str:
    expected = list(r.get("expected_docs") or [])
    retrieved = list(r.get("retrieved") or [])
    items = [f'<li class="expected">{_e(p)} ✓ expected</li>' if p in expected else f"<li>{_e(p)}</li>"
             for p in retrieved]
    missed = [f'<li class="missed">{_e(p)} ✗ missed</li>' for p in expected if p not in retrieved]
    listing = f"<ol>{''.join(items)}</ol>" if items else "<p>none retrieved</p>"
    return listing + (f"<p>Expected but not retrieved:</p><ul>{''.join(missed)}</ul>" if missed else "")


def _tool_section(r: dict) -> str:
    calls = r.get("tool_calls") or []
    listed = "".join(f"<li><code>{_e(c.get('name'))}"
                     f"({_e(json.dumps(c.get('args', {}), ensure_ascii=False, default=str))})</code></li>"
                     for c in calls)
    t = r.get("tools") or {}
    extra = "".join(f"<li>{name.replace('_', ' ')}: {_value(t[name])}</li>"
                    for name in ("unexpected", "missing", "wrong_args") if t.get(name))
    verdict = "" if t.get("pass") is None else ("pass" if t["pass"] else "FAIL")
    return (f"<h3>Tool calls</h3>{f'<ul>{listed}</ul>' if listed else '<p>none</p>'}"
            f'<p>Tool metric: <span class="{_verdict(t.get("pass"))}">{verdict or "-"}</span>, '
            f"score {_num(t.get('score'))}</p>{f'<ul>{extra}</ul>' if extra else ''}"
            f"<pre>{_e(t.get('reason') or '')}</pre>{_deepeval_disagrees(t)}")


def _deepeval_disagrees(t: dict) -> str:
    """DeepEval's own score and reason, where its set matching differs from the harness's count."""
    if not deepeval_disagrees(t):
        return ""
    return (f"<p>DeepEval's ToolCorrectnessMetric disagrees: score {_num(t['deepeval']['score'])} (it matches "
            f"expected tools as a set; the stage uses the count above)</p><pre>{_e(t['deepeval']['reason'])}</pre>")


def _judged(r: dict, threshold: float) -> str:
    rows = []
    for m, v in (r.get("judged") or {}).items():
        score = v.get("score")
        ok = None if m not in GATING else score is not None and score >= threshold
        rows.append(f'<tr><td>{_e(m)}</td><td class="{_verdict(ok)} num">{_num(score)}</td>'
                    f"<td>{_e(v.get('reason') or '')}</td></tr>")
    if not rows:
        return "<h3>Judge</h3><p>no judged metrics</p>"
    return ("<h3>Judge</h3><table><thead><tr><th>metric</th><th>score</th><th>reason</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _case(r: dict, threshold: float) -> str:
    failure = r.get("first_failure")
    badge = (f'<span class="badge fail">first failure: {_e(failure)}</span>' if failure
             else '<span class="badge pass">passes every stage</span>')
    error = f'<p class="error">Error: {_e(r["error"])}</p>' if r.get("error") else ""
    return (f'<section id="case-{_e(r["id"])}" class="case {"failed" if failure else "passed"}">'
            f"<h2>{_e(r['id'])}{badge}</h2>{error}"
            f'<h3>Question</h3><p class="text">{_e(r.get("question", ""))}</p>'
            f"{_tool_section(r)}<h3>Retrieved pages (rank order)</h3>{_pages(r)}"
            f'<h3>Answer</h3><p class="text">{_e(r.get("answer") or "")}</p>'
            f'<h3>Reference</h3><p class="text">{_e(r.get("reference") or "")}</p>'
            f"{_judged(r, threshold)}</section>")


def html(report: dict) -> str:
    """The whole report as one HTML page with inline CSS and no external resources."""
    key = report.get("key") or {}
    title = (f"Model {key.get('model', '?')}, embedder {key.get('embedder', '?')}, judge {key.get('judge', '?')}"
             f"{' (offline backends)' if key.get('offline') else ''}")
    threshold = report.get("threshold", 0.7)
    cases = f"<p>Cases {_e(key['cases'])}; threshold {_e(threshold)}.</p>" if "cases" in key else ""
    body = "".join(_case(r, threshold) for r in report.get("rows", []))
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{_e(title)}</h1>{cases}{_summary(report)}"
            f"<h2>Stages</h2>{_table(report)}<h2>Cases</h2>{body}</body></html>\n")

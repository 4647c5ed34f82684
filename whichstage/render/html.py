"""The evaluation report as one self-contained HTML page: summary, pictures, stage table and every case in
detail. The summary is the markdown report's own (whichstage/render/markdown.py), rendered here, so the page says what
the markdown says in the same words; a stage's verdict is coloured only where it gates.

Pure: `html(report)` returns the page; it loads nothing from the network (no external CSS, JS or fonts). This
module is the page's scaffold; the stage table and the cases are html_cases', the pictures html_figures', the
style and escaping html_text's.
"""
import functools
from html import escape
from typing import Iterator, Optional

from whichstage._util.console import visible
from whichstage.render import fix_list
from whichstage.render.row_view import RowView, row_view
from whichstage.render.html_cases import case_section, stage_table
from whichstage.render.html_figures import FIGURE_CSS, pictures
from whichstage.render.html_markup import CSS, escaped
from whichstage.render.markdown import run_line, summary
from whichstage.scoring import gating
from whichstage.model.dicts import ReportDict

# The markdown summary as HTML: its tables, lists, code and emphasis. The markdown escapes every outside text
# and writes a line break as <br>; any other HTML, and any link or image (which could fetch), shows as text.
# Built on first use: a page without a summary never needs it.
@functools.cache
def markdown():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table").disable(["image", "link", "autolink", "reference"])
    md.add_render_rule("html_inline", lambda tokens, i, *_: "<br>" if tokens[i].content == "<br>"
                       else escape(tokens[i].content))
    md.add_render_rule("html_block", lambda tokens, i, *_: f"<p>{escape(tokens[i].content)}</p>")
    return md


def _summary(report: ReportDict) -> str:
    """The markdown report's summary, in the same words; nothing for a report without one."""
    if not report.get("summary"):
        return ""
    return f'<div class="summary">{markdown().render(summary(report))}</div>'


def _fix_list(report: ReportDict) -> str:
    """What to fix first, as the markdown opens with it: the page's first section."""
    lines = fix_list.markdown_lines(report)
    return f'<div class="fix-list">{markdown().render(chr(10).join(lines))}</div>' if lines else ""


def html(report: ReportDict) -> str:
    """The whole report as one HTML page with inline CSS and no external resources."""
    return "".join(html_parts(report))


def html_parts(report: ReportDict, views: Optional[list[RowView]] = None) -> Iterator[str]:
    """The page of `html`, a piece at a time (a case each), so a report of many cases is written without
    being held whole. `views`: the rows' row_view, when the caller has them."""
    key = report.get("key") or {}
    views = views if views is not None else [row_view(r) for r in report.get("rows", [])]
    agent = f"Agent {key['agent']}: " if key.get("agent") else ""
    title = (f"{agent}model {key.get('model', '?')}, embedder {key.get('embedder', '?')}, judge {key.get('judge', '?')}"
             f"{' (the offline backends)' if key.get('offline') else ''}")
    run = f"<p>{markdown().renderInline(visible(run_line(report)))}</p>" if "cases" in key else ""
    yield ("<!DOCTYPE html>\n"
           f'<html lang="en"><head><meta charset="utf-8"><title>{escaped(title)}</title>'
           f"<style>{CSS}{FIGURE_CSS}</style></head><body><h1>{escaped(title)}</h1>{run}{_fix_list(report)}"
           f"{_summary(report)}"
           f"{pictures(report)}<h2>Stages</h2>{stage_table(report, views)}<h2>Cases</h2>")
    default = report.get("threshold", gating.THRESHOLD)
    for r, view in zip(report.get("rows", []), views, strict=False):
        yield case_section(r, default, view)
    yield "</body></html>\n"

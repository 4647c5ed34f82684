"""The HTML pages' shared text: their style sheet, escaping of every value they show, and the small cells
and marks the stage tables are built of. Pure; compare.py's page uses it too."""
from html import escape
from typing import Any, Optional

from whichstage._util import jsontext as json_text
from whichstage._util.console import visible

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
p.cut { margin: .2rem 0 .2rem 1.2rem; color: #555; font-size: .85rem; border-top: 1px dashed #999; }
ol.below-k, li.below-k { color: #666; }
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



def num(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def verdict_class(ok: Optional[bool]) -> str:
    """A verdict as the cell's class: coloured pass or fail where it gates, else neutral."""
    return "neutral" if ok is None else ("pass" if ok else "fail")


def cell(col: str, text: str, ok: Optional[bool], numeric: bool = False) -> str:
    return f'<td data-col="{col}" class="{verdict_class(ok)}{" num" if numeric else ""}">{text}</td>'


def mark(ok: Optional[bool]) -> str:
    return "-" if ok is None else ("pass" if ok else "FAIL")


def listed(v: Any) -> str:
    """A tool verdict's list (missing, unexpected, wrong arguments) as escaped text."""
    if isinstance(v, (list, tuple)):
        return ", ".join(escaped(x) for x in v) or "-"
    return escaped(v)

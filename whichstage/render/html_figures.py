"""The HTML page's pictures, as inline SVG drawn here with nothing fetched: a stage funnel, pass rates with
their Wilson intervals per stage and per category, and the counterfactual runs' verdicts. Every number in them
is also text, and the tables say everything without them. Pure."""
from whichstage.render.html_markup import escaped
from whichstage.scoring.gating import stage_order, stage_results
from whichstage.model.stages import STAGES
from whichstage._util.stats import rate_text, wilson_interval
from whichstage.model.dicts import ReportDict, RowDict

# Okabe-Ito blue and vermilion: told apart in every common colour-vision deficiency, and the failing part is
# also hatched. Against white: PASS 5.2:1, FAIL 3.9:1, the outline of a RATE_FILL bar 5.2:1, text 16:1.
PASS, FAIL, RATE_FILL, TRACK, INK, MUTED = "#0072B2", "#D55E00", "#56B4E9", "#eeeeee", "#1d1d1f", "#555555"
LABEL_W, BAR_W, GAP, TEXT_W, ROW_H = 190, 340, 12, 300, 26
WIDTH = LABEL_W + BAR_W + GAP + TEXT_W
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
    "Each case whose first failure was retrieval was run again by the same agent with its input at that stage "
    "made right: for retrieval, a search tool returning the case's expected pages. <em>Fixed</em> "
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
                   f'text-anchor="middle" fill="{MUTED}" font-size="11">{escaped(text)}</text>'
                   for share, text in ticks)


def _figure(heading: str, svg: str, caption: str, extra: str = "") -> str:
    """Its visible heading, the picture, the caption defining what it shows, then any table or list."""
    return (f'<figure class="chart"><h3>{escaped(heading)}</h3>{svg}<figcaption>{caption}</figcaption>{extra}'
            "</figure>")


def _scored(report: ReportDict) -> list[RowDict]:
    return [r for r in report.get("rows", []) if not r.get("error") and r.get("first_failure") != "error"]


def funnel(report: ReportDict) -> list[dict]:
    """Per stage in gating order (stages.stage_order: STAGES, then the project's criteria), of the scored (not
    errored) cases: how many enter it (it applies to them and they passed every earlier stage that applied to
    them) and how many of those pass it. A case fails at the stage its first failure names, so entering -
    passing is that stage's first-failure count."""
    cases = [(r.get("first_failure"), {*stage_results(r), r.get("first_failure")}) for r in _scored(report)]
    steps = []
    order = stage_order(report.get("rows", []))
    for i, stage in enumerate(order):
        earlier = order[:i]
        entering = [failure for failure, applies in cases if stage in applies and failure not in earlier]
        steps.append({"stage": stage, "entering": len(entering),
                      "passing": sum(failure != stage for failure in entering)})
    return steps


def _funnel_figure(report: ReportDict) -> str:
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


def _stage_rates(report: ReportDict) -> str:
    s = report.get("summary") or {}
    stages = s.get("stages")
    if not isinstance(stages, dict):
        stages = {}
    rates = ([("every stage", s["pass_rate"])] if isinstance(s.get("pass_rate"), dict) else []) + \
        [(stage.replace("_", " "), stages[stage]) for stage in stage_order(report.get("rows", [])) if stage in stages]
    return _rate_figure("stage-rates", "Pass rate per stage", "Pass rate per stage with its 95% Wilson interval",
                        rates, STAGE_CAPTION)


def _category_rates(report: ReportDict) -> str:
    categories = (report.get("summary") or {}).get("categories")
    if not isinstance(categories, dict):
        return ""
    return _rate_figure("category-rates", "Pass rate per category (reported, never gated)",
                        "Pass rate per category with its 95% Wilson interval; never gated",
                        [(str(name), r) for name, r in categories.items()], CATEGORY_CAPTION)


def _counterfactuals(report: ReportDict) -> dict[str, dict]:
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


def _counterfactual_figure(report: ReportDict) -> str:
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
    return _figure("Counterfactual runs", svg, COUNTERFACTUAL_CAPTION, f"<ul>{''.join(lists)}</ul>")


FIGURE_CSS = """
figure.chart { margin: .8rem 0 1.6rem; }
svg.chart { display: block; max-width: 100%; height: auto;
            font: 13px system-ui, -apple-system, "Segoe UI", sans-serif; }
svg.chart text.value { font-variant-numeric: tabular-nums; }
figcaption { font-size: .85rem; color: #444; max-width: 62rem; margin-top: .3rem; }
figure.chart details, figure.chart ul { font-size: .85rem; margin: .3rem 0; }
p.counterfactual, p.counterfactual-answer, p.reason, p.diagnosis { margin: .3rem 0; }
"""


def pictures(report: ReportDict) -> str:
    """The figures, between the summary and the stage table; the tables say everything without them."""
    figures = _funnel_figure(report) + _stage_rates(report) + _category_rates(report) + \
        _counterfactual_figure(report)
    return f'<h2>Pictures</h2><div id="pictures">{figures}</div>' if figures else ""



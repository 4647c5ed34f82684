"""Tests for html_report: pure checks on the page, then one render in headless Chromium."""
import json
import os
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from whichstage.scoring.gating import first_failure
from whichstage.model.stages import STAGES, THRESHOLD
from whichstage.scoring.summary import summarize
from whichstage.render.html_figures import BAR_W, LABEL_W
from whichstage.render.html import html
from whichstage._util.stats import rate, rate_text, wilson_interval

HERE = Path(__file__).parents[2]
CHROMIUM = Path("/usr/bin/chromium")


def rules_report() -> dict:
    return json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())


def all_report() -> dict:
    return json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.all.json").read_text())


def row(case_id: str, recall: float = 1.0, faithfulness: float = 1.0) -> dict:
    """A synthetic report row expecting two pages; recall < 1 means the second one was missed."""
    retrieved = ["a", "b", "c"] if recall == 1.0 else ["a", "x", "y"]
    judged = {m: {"score": 1.0, "reason": f"{m} reason"}
              for m in ("contextual_precision", "contextual_recall", "answer_relevancy")}
    judged["faithfulness"] = {"score": faithfulness, "reason": "faithfulness reason"}
    judged["contextual_precision"]["score"] = 0.1
    return {"id": case_id, "question": "q?", "reference": "ref", "answer": "ans", "calls": ["search_docs"],
            "tool_calls": [{"name": "search_docs", "args": {"query": "q"}}], "retrieved": retrieved,
            "expected_docs": ["a", "b"], "expected_tools": ["search_docs"],
            "tools": {"score": 1.0, "reason": "ok", "unexpected": [], "missing": [], "pass": True},
            "retrieval": {"hit": True, "recall": recall, "reciprocal_rank": 1.0,
                          "missed": [] if recall == 1.0 else ["b"]},
            "judged": judged, "usage": {}, "first_failure": None if recall == 1.0 else "retrieval"}


def synthetic(*rows: dict) -> dict:
    return {"key": {"model": "m", "embedder": "e", "judge": "j", "cases": "c@1"}, "k": 3,
            "threshold": THRESHOLD, "rows": list(rows), "summary": summarize(list(rows), 3)}


class Page(HTMLParser):
    """Collects case section ids and, per stage-table body row, each cell's data-col -> class."""

    def __init__(self, text: str):
        super().__init__()
        self.sections, self.rows, self._table, self._body = [], [], None, False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and "case" in (a.get("class") or "").split():
            self.sections.append(a.get("id"))
        elif tag == "table":
            self._table = a.get("id")
        elif tag == "tbody" and self._table == "stages":
            self._body = True
        elif tag == "tr" and self._body:
            self.rows.append({})
        elif tag == "td" and self._body and "data-col" in a:
            self.rows[-1][a["data-col"]] = a.get("class", "")

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._body = False
        elif tag == "table":
            self._table = None


def test_every_case_of_rules_json_has_a_section():
    report = rules_report()
    assert Page(html(report)).sections == [f"case-{r['id']}" for r in report["rows"]]


def test_script_in_answer_is_escaped():
    bad = row("xss")
    bad["answer"] = '<script>alert("pwned")</script> & more'
    page = html(synthetic(bad))
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; more" in page


def test_page_references_no_remote_resource():
    page = html(rules_report())
    remote = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""",
                        re.I)
    assert not remote.search(page)


def verdicts(report: dict) -> list[dict]:
    """Per stage-table row, each column's pass/fail/neutral class."""
    return [{col: cls.split()[0] for col, cls in r.items() if cls} for r in Page(html(report)).rows]


def test_retrieval_failure_colours_only_the_retrieval_cells():
    good, bad = verdicts(synthetic(row("good"), row("bad", recall=0.5)))
    for col in ("hit", "recall", "rr"):
        assert (good[col], bad[col]) == ("pass", "fail"), col
    for col in ("tools", "faithfulness", "contextual_recall", "answer_relevancy"):
        assert bad[col] == "pass", col
    assert (good["first_failure"], bad["first_failure"]) == ("pass", "fail")


def test_contextual_precision_is_neutral_even_when_low():
    assert verdicts(synthetic(row("low-precision")))[0]["contextual_precision"] == "neutral"


def test_judged_score_below_threshold_is_fail():
    assert verdicts(synthetic(row("unfaithful", faithfulness=0.5)))[0]["faithfulness"] == "fail"


def test_expected_pages_are_marked_and_missed_ones_listed():
    page = html(synthetic(row("bad", recall=0.5)))
    assert '<li class="expected">a &#10003; expected</li>' in page  # ✓ and ✗ as references: the page's own
    assert '<li class="missed">b &#10007; missed</li>' in page  # markup stays ASCII, quick to build and write


def test_error_row_shows_its_error_text():
    broken = row("broken")
    broken.update(first_failure="error", error="Timeout <after 30 s>", judged={})
    page = html(synthetic(broken))
    assert page.count("Timeout &lt;after 30 s&gt;") == 3  # summary's first failures, stage table, case section


def test_the_summary_reads_in_the_markdown_s_own_sentences():
    report = rules_report()
    page = html(report)
    for sentence in ("17/29 cases pass every stage, 59% (95% CI 41%-74%).",
                     "Per stage: behaviour 11/14 = 79% (95% CI 52%-92%);", "hybrid (RRF, k=60)",
                     "9 cases held out and not shown", "Latency: agent run p50"):
        assert sentence in page, sentence
    assert "rrf k" not in page and "rungs" not in page and "<dl" not in page  # no field dump


def test_title_names_the_models_and_offline_backends():
    page = html(rules_report())
    assert "<title>Agent assistant:build_agent: model rules, embedder hash, judge lexical (the offline backends)</title>" in page


def test_minimal_report_without_summary_does_not_crash():
    report = synthetic(row("good"))
    report["summary"] = {}
    assert 'id="case-good"' in html(report)


class Svg(HTMLParser):
    """Every element inside an inline SVG: (svg id, tag, attributes, the enclosing <g>'s attributes); per SVG
    the text of its <text> elements and of its <title>s (tooltips); and the figure captions, all decoded as a
    browser reads them."""

    def __init__(self, text: str):
        super().__init__()
        self.elements, self.texts, self.titles, self.captions = [], {}, {}, []
        self._svg, self._g, self._in, self._caption = None, {}, [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self._svg = a.get("id")
            self.texts[self._svg], self.titles[self._svg] = [], []
        elif tag == "figcaption":
            self._caption = ""
        if self._svg is not None:
            if tag == "g":
                self._g = a
            self.elements.append((self._svg, tag, a, self._g))
            self._in.append(tag)

    def handle_endtag(self, tag):
        if tag == "figcaption":
            self.captions.append(self._caption)
            self._caption = None
        if self._svg is None:
            return
        self._in.pop()
        if tag == "g":
            self._g = {}
        elif tag == "svg":
            self._svg = None

    def handle_data(self, data):
        if self._caption is not None:
            self._caption += data
        if self._svg is not None and self._in and self._in[-1] in ("text", "title"):
            (self.texts if self._in[-1] == "text" else self.titles)[self._svg].append(data)

    def find(self, svg: str, tag: str, cls: str = "") -> list[tuple[dict, dict]]:
        """(attributes, enclosing <g>'s attributes) of each `tag` in SVG `svg` with class `cls`."""
        return [(a, g) for s, t, a, g in self.elements
                if s == svg and t == tag and (not cls or cls in (a.get("class") or "").split())]


def scored(*rows: dict) -> dict:
    """A report whose rows' first failures and summary are computed as evaluate.py computes them."""
    for r in rows:
        r["first_failure"] = first_failure(r)
    report = synthetic(*rows)
    report["summary"] = summarize(list(rows), 3)
    return report


def test_funnel_counts_the_cases_entering_and_passing_each_stage():
    chat = row("chat")
    chat.update(retrieval=None, expected_docs=[], behaviour={"pass": True, "failures": []},
                judged={"answer_relevancy": {"score": 1.0, "reason": "on topic"}})
    rude = row("rude")
    rude.update(retrieval=None, expected_docs=[], behaviour={"pass": False, "failures": ["said a secret"]},
                judged={"answer_relevancy": {"score": 1.0, "reason": "on topic"}})
    broken = row("broken")
    broken.update(error="Timeout", judged={})
    report = scored(row("good"), row("missed", recall=0.5), row("unfaithful", faithfulness=0.5), chat, rude,
                    broken)
    page = Svg(html(report))
    steps = {g["data-stage"]: (int(g["data-entering"]), int(g["data-passing"]))
             for g, _ in page.find("funnel", "g", "step")}
    # behaviour applies to chat and rude only; rude stops there; the broken case is left out everywhere;
    # retrieval lets in the three cases expecting pages; faithfulness the two that kept their pages;
    # answer relevancy good and chat (chat skipped retrieval and the context metrics, and rejoins here).
    assert steps == {"behaviour": (2, 1), "tools": (4, 4), "retrieval": (3, 2), "faithfulness": (2, 1),
                     "contextual_recall": (1, 1), "answer_relevancy": (2, 2), "facts": (0, 0)}
    assert "2 of 5 pass every stage" in page.texts["funnel"]  # good and chat


def test_funnel_failures_are_the_first_failure_counts_of_the_bundled_run():
    report = all_report()
    page = Svg(html(report))
    failing = {g["data-stage"]: int(g["data-entering"]) - int(g["data-passing"])
               for g, _ in page.find("funnel", "g", "step")}
    assert {s: n for s, n in failing.items() if n} == report["summary"]["first_failures"]


def test_whisker_ends_at_the_wilson_bounds_of_8_of_9():
    report = synthetic(row("good"))
    report["summary"]["stages"] = {"faithfulness": rate(8, 9)}
    page = Svg(html(report))
    [(whisker, g)] = [(a, g) for a, g in page.find("stage-rates", "path", "whisker") if g["data-name"] != "every stage"]
    low, high = wilson_interval(8, 9)
    assert (g["data-name"], float(whisker["data-low"]), float(whisker["data-high"])) == ("faithfulness", low, high)
    xs = [float(x) for x in re.findall(r"M([\d.]+) ", whisker["d"])]  # the line's start, then each cap
    assert abs((xs[0] - LABEL_W) / BAR_W - low) < 0.01 / BAR_W and abs((xs[2] - LABEL_W) / BAR_W - high) < 0.01 / BAR_W
    [bar] = [a for a, g in page.find("stage-rates", "rect", "rate") if g["data-name"] == "faithfulness"]
    assert abs(float(bar["width"]) - 8 / 9 * BAR_W) < 0.01
    assert "8/9 = 89% (95% CI 57%-98%)" in page.texts["stage-rates"]


def test_category_bars_carry_their_rates_and_the_never_gated_caption():
    report = all_report()
    page = Svg(html(report))
    names = [g["data-name"] for a, g in page.find("category-rates", "path", "whisker")]
    assert names == list(report["summary"]["categories"])
    for r in report["summary"]["categories"].values():
        assert rate_text(r) in page.texts["category-rates"]
    assert any("Categories are reported, never gated" in c for c in page.captions)


def counterfactual_report() -> dict:
    fixed, still = row("fixed-by-pages", recall=0.5), row("still-unfaithful", recall=0.5)
    fixed["counterfactual"] = {"for": "retrieval", "first_failure": None, "fixed": True}
    still["counterfactual"] = {"for": "retrieval", "first_failure": "faithfulness", "fixed": False}
    report = synthetic(row("good"), fixed, still)
    report["summary"]["counterfactual"] = {"retrieval": {"fixed": 1, "still_fails": 1}}
    return report


def case_section(page: str, case_id: str) -> str:
    return page[page.index(f'<section id="case-{case_id}"'):].split("</section>")[0]


def test_counterfactual_verdicts_show_in_their_cases_and_in_a_picture():
    page = html(counterfactual_report())
    assert ("Counterfactual (retrieval):</strong> with the expected pages retrieval passes and the case then passes: "
            "the retriever is the cause." in case_section(page, "fixed-by-pages"))
    assert ("Counterfactual (retrieval):</strong> with the expected pages retrieval passes and the case then fails "
            "at faithfulness." in case_section(page, "still-unfaithful"))
    assert 'class="counterfactual"' not in case_section(page, "good")
    [(fixed, g)] = Svg(page).find("counterfactual", "rect", "cf-fixed")
    assert (g["data-kind"], g["data-fixed"], g["data-still-fails"]) == ("retrieval", "1", "1")
    assert "1 fixed, 1 still fails (of 2)" in Svg(page).texts["counterfactual"]


def test_counterfactual_counts_come_from_the_rows_when_the_summary_lacks_them():
    report = counterfactual_report()
    del report["summary"]["counterfactual"]
    [(still, g)] = Svg(html(report)).find("counterfactual", "rect", "cf-still")
    assert (g["data-fixed"], g["data-still-fails"]) == ("1", "1")
    assert still.get("fill") == "url(#counterfactual-hatch)"


def test_no_counterfactual_without_the_field():
    report = all_report()
    report["summary"].pop("counterfactual", None)
    for r in report["rows"]:
        r.pop("counterfactual", None)
    page = html(report)
    assert 'id="counterfactual"' not in page and "Counterfactual" not in page


def test_hostile_case_id_and_category_are_escaped_inside_the_svg():
    case_id, category = '<script>alert("x")</script>', '"><svg onload=x>&amp;'
    bad = row(case_id, recall=0.5)
    bad["counterfactual"] = {"for": "retrieval", "first_failure": None, "fixed": True}
    report = synthetic(bad)
    report["summary"]["categories"] = {category: {**rate(1, 2), "top_failure": None}}
    page = html(report)
    assert "<script" not in page and "<svg onload" not in page
    svg = Svg(page)  # each is read back as the very same text, in an attribute, a label and a tooltip
    assert [g["data-name"] for a, g in svg.find("category-rates", "path", "whisker")] == [category]
    assert category in svg.texts["category-rates"]
    assert f"fixed: {case_id}" in svg.titles["counterfactual"]


def test_every_picture_has_a_title_and_a_description():
    page = Svg(html(counterfactual_report()))
    svgs = {s for s, *_ in page.elements}
    assert svgs == {"funnel", "stage-rates", "category-rates", "counterfactual"}
    for s in svgs:
        tags = [t for svg, t, a, g in page.elements if svg == s]
        assert tags[1:3] == ["title", "desc"], s


def test_pictures_fetch_nothing():
    for page in (html(counterfactual_report()), html(all_report())):
        pictures = page[page.index("<h2>Pictures</h2>"):page.index("<h2>Stages</h2>")]
        assert "<svg" in pictures and not re.search(r"https?:|//", pictures)  # not even an xmlns
        # anywhere on the page (a case's answer may quote a URL as text): nothing that loads anything
        assert not re.search(r"<(link|script|img|image|use|iframe|object|embed)\b|<[^>]*\s(src|srcset)\s*=|"
                             r"@import|url\((?!#)", page, re.I)


def chromium(tmp_path: Path, page: Path, *flags: str) -> subprocess.CompletedProcess:
    if not CHROMIUM.exists():
        if "CI" in os.environ:
            pytest.fail(f"{CHROMIUM} is missing; CI must install it: apt-get install -y chromium")
        pytest.skip(f"{CHROMIUM} is not installed")
    done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *flags, page.as_uri()],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_chromium_renders_every_case(tmp_path):
    report = rules_report()
    page = tmp_path / "docs-assistant+rules+hash+lexical.html"
    page.write_text(html(report), encoding="utf-8")
    dom = Page(chromium(tmp_path, page, "--dump-dom").stdout)
    assert dom.sections == [f"case-{r['id']}" for r in report["rows"]]
    assert len(dom.rows) == len(report["rows"])


def test_chromium_draws_the_pictures_of_the_bundled_run(tmp_path):
    report = all_report()
    page = tmp_path / "docs-assistant+rules+hash+lexical.all.html"
    page.write_text(html(report), encoding="utf-8")
    dom = Svg(chromium(tmp_path, page, "--dump-dom").stdout)
    assert {s for s, *_ in dom.elements} == {"funnel", "stage-rates", "category-rates", "counterfactual"}
    assert len(dom.find("funnel", "rect", "pass")) == len(STAGES) + 1
    assert len(dom.find("stage-rates", "path", "whisker")) == 1 + len(report["summary"]["stages"])
    assert len(dom.find("category-rates", "path", "whisker")) == len(report["summary"]["categories"])
    shot = tmp_path / "pictures.png"
    chromium(tmp_path, page, "--window-size=1300,1800", f"--screenshot={shot}")
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (1300, 1800)
    assert len(png) > 100_000, "a nearly blank screenshot"  # white compresses to a few kB; the figures do not

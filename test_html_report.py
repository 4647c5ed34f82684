"""Tests for html_report: pure checks on the page, then one render in headless Chromium."""
import json
import os
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from html_report import html

HERE = Path(__file__).parent
CHROMIUM = Path("/usr/bin/chromium")


def rules_report() -> dict:
    return json.loads((HERE / "runs" / "rules+hash+lexical.json").read_text())


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
    return {"key": {"model": "m", "embedder": "e", "judge": "j", "cases": "c@1"}, "k": 3, "threshold": 0.7,
            "rows": list(rows), "summary": {"cases": len(rows), "passed": 1}}


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
    assert '<li class="expected">a ✓ expected</li>' in page
    assert '<li class="missed">b ✗ missed</li>' in page


def test_error_row_shows_its_error_text():
    broken = row("broken")
    broken.update(first_failure="error", error="Timeout <after 30 s>", judged={})
    page = html(synthetic(broken))
    assert page.count("Timeout &lt;after 30 s&gt;") == 2  # stage table and case section


def test_newer_summary_fields_are_rendered():
    report = synthetic(row("good"))
    report["summary"].update(pass_rate={"passed": 9, "total": 10, "rate": 0.9, "low": 0.596, "high": 0.982},
                             stages={"tools": {"passed": 10, "total": 10, "rate": 1.0, "low": 0.722, "high": 1.0}},
                             errors=2, latency={"p50_s": 1.25})
    page = html(report)
    assert "9/10 = 90% (95% CI 60%-98%)" in page
    assert "<dd>tools 10/10 = 100% (95% CI 72%-100%)</dd>" in page
    assert "<dt>errors</dt><dd>2</dd>" in page and "p50 1.25 s" in page


def test_title_names_the_models_and_offline_backends():
    page = html(rules_report())
    assert "<title>Model rules, embedder hash, judge lexical (offline backends)</title>" in page


def test_minimal_report_without_summary_does_not_crash():
    report = synthetic(row("good"))
    report["summary"] = {}
    assert 'id="case-good"' in html(report)


def test_chromium_renders_every_case(tmp_path):
    if not CHROMIUM.exists():
        if "CI" in os.environ:
            pytest.fail(f"{CHROMIUM} is missing; CI must install it: apt-get install -y chromium")
        pytest.skip(f"{CHROMIUM} is not installed")
    report = rules_report()
    page = tmp_path / "rules+hash+lexical.html"
    page.write_text(html(report), encoding="utf-8")
    done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Page(done.stdout)
    assert dom.sections == [f"case-{r['id']}" for r in report["rows"]]
    assert len(dom.rows) == len(report["rows"])

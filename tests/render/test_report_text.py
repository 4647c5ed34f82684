"""The markdown report escapes the text that comes from the inputs and the models: rendered as GitHub renders
it (CommonMark with tables and inline HTML on; markdown-it-py here), no answer, reason or name becomes HTML,
breaks a table cell or row, or ends a code span, and each still reads as its original characters.

The report is the bundled one (runs/docs-assistant+rules+hash+lexical.json) with hostile text put in."""
import copy
import html
import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from whichstage.render import markdown as report
from whichstage.render.files import one_line
from whichstage.render.markdown import markdown

HERE = Path(__file__).parents[2]
BUNDLED = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
ANSWER = "<script>alert(1)</script> | x"
MODEL = "m<b>|"
REASON = "The score is 0.00 because\n| a | b |\n|---|---|\n<img src=x onerror=alert(2)> & `tick"
ERROR = "ValueError: bad </td></tr> row\r\nsecond line | `code` &amp;"


def hostile() -> dict:
    """The bundled report with hostile text in every place the markdown shows outside text."""
    report = copy.deepcopy(BUNDLED)
    rows = {r["id"]: r for r in report["rows"]}
    report["key"].update(model=MODEL, embedder="e<i>|mbed", judge="j&<u>", agent="a<s>|:build", cases="set|<1>")
    report["split"] = "dev<br>"
    behaviour = rows["max-tasks"]
    behaviour["answer"] = ANSWER
    behaviour["behaviour"]["failures"] = [f"answered where the docs hold no answer: '{ANSWER}'"]
    behaviour["calls"] = ["search<b>|docs", "read`page`\nx"]
    rows["issue-231"]["judged"]["contextual_recall"]["reason"] = REASON
    retrieval = rows["shell-alias"]
    retrieval["retrieval"]["missed"] = ["ti|ps<x>"]
    retrieval["retrieved"] = ["page\n|", "a&b"]
    errored = rows["hello"]
    errored["first_failure"], errored["error"] = "error", ERROR
    summary = report["summary"]
    summary["categories"] = {f"{name}<i>|\n" if name == "answerable" else name: {**value, "top_failure": "x|<y>"}
                             for name, value in summary["categories"].items()}
    summary["ladder"]["retriever"] = "r<a>|nk"
    summary["repeats"] = {"n": 2, "mean_pass_rate": 0.5, "pass_all": {"passed": 1, "total": 2},
                          "flaky": {"id`with``ticks": {"passes": 1, "flipped": ["behaviour<b>|"]}}}
    return report


@pytest.fixture(scope="module")
def written() -> str:
    return markdown(hostile())


def rendered(source: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(source)


def test_the_bundled_report_has_nothing_to_escape():
    assert markdown(BUNDLED) + "\n" == (HERE / "runs" / "docs-assistant+rules+hash+lexical.md").read_text()


def test_no_outside_text_is_read_as_html(written):
    assert "<script" not in written and "<img" not in written and "</td>" not in written
    assert re.findall(r"<(?!br>)", written) == []  # the only tag in the markdown is the line breaks it writes
    page = rendered(written)
    assert "<script" not in page and "<img" not in page and "<b>" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; | x" in written


def test_the_escaped_text_renders_as_its_original_characters(written):
    page = html.unescape(re.sub(r"<[^>]+>", "", rendered(written).replace("<br />", "\n").replace("<br>", "\n")))
    for original in (ANSWER, MODEL, "e<i>|mbed", "j&<u>", "a<s>|:build", "set|<1>", "ti|ps<x>", "x|<y>",
                     "r<a>|nk", "id`with``ticks", "behaviour<b>|", "search<b>|docs", "page\n|, a&b",
                     "The score is 0.00 because\n| a | b |\n|---|---|\n<img src=x onerror=alert(2)> & `tick",
                     "ValueError: bad </td></tr> row\nsecond line | `code` &amp;"):
        assert original in page, original


def tables(source: str) -> list[list[str]]:
    """The markdown's tables, each its lines."""
    found, current = [], []
    for line in source.split("\n"):
        if line.startswith("|"):
            current.append(line)
        elif current:
            found, current = found + [current], []
    return found + ([current] if current else [])


def cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line)) - 2


def test_every_table_row_is_one_line_with_its_header_s_cells(written):
    stage, ladder, category = tables(written)
    assert len(stage) == 2 + len(BUNDLED["rows"]) and len(ladder) == 2 + 3
    assert len(category) == 2 + len(BUNDLED["summary"]["categories"])
    for table in (stage, ladder, category):
        assert {cells(line) for line in table} == {cells(table[0])}, table
    page = rendered(written)
    assert page.count("<tr>") == len(stage) - 1 + len(ladder) - 1 + len(category) - 1
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        assert row.count("<td") + row.count("<th") in (13, 4, 5), row


def test_each_list_item_and_sentence_stays_one_line(written):
    lines = written.split("\n")
    assert sum(line.startswith("- `issue-231` **contextual_recall**: ") for line in lines) == 1
    assert sum(line.startswith("- `hello` **error**: ValueError") for line in lines) == 1
    flaky = "- flaky ```id`with``ticks```: passed 1/2; flipped: behaviour&lt;b&gt;|"
    assert sum(line.startswith(flaky) for line in lines) == 1
    assert lines[0].startswith("# Agent a&lt;s&gt;|:build; model m&lt;b&gt;|, ")  # the run opens its report
    page = rendered(written)
    # the reason's lines made no heading nor table: the title and the fix list's heading are the page's
    assert page.count("<h") == 2 and page.count("<table>") == 3


@pytest.mark.parametrize("value, shown", [("plain words, ids-1 and 0.5", "plain words, ids-1 and 0.5"),
                                          ("<a> & b", "&lt;a&gt; &amp; b"), ("a\r\nb\nc\rd", "a<br>b<br>c<br>d"),
                                          ("`x`", "\\`x\\`")])
def test_text_escapes_only_what_markdown_would_read(value, shown):
    assert report.text(value) == shown


def test_a_cell_escapes_its_pipes_and_a_code_span_outlasts_its_backticks():
    cell, code = report.cell, report.code
    assert cell("a|b<c>") == "a\\|b&lt;c&gt;"
    assert code("plain") == "`plain`" and code("a`b") == "``a`b``" and code("`a``") == "``` `a`` ```"
    assert code("<b>\nx") == "`<b> x`"  # HTML is not read in a code span: it shows as written
    for value in ("a`b", "`a``", " a "):
        assert rendered(code(value)) == f"<p><code>{html.escape(value, quote=False)}</code></p>\n"


# ---- the JSON report's lines -------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [{"reason": "déjà vu", "score": 0.5, "n": 3}, [1e-05, 1e16, -0.0, True, None],
                                   {"big": 2 ** 70}, {"lone": "\ud800"}, {1: "a key that is a number"}])
def test_a_report_line_reads_back_as_json_dumps_would(value):
    line = one_line(value)
    assert "\n" not in line and json.loads(line) == json.loads(json.dumps(value))


def test_a_report_line_writes_a_number_that_is_not_finite_as_null():
    assert json.loads(one_line({"score": float("nan"), "bound": float("inf")})) == {"score": None, "bound": None}

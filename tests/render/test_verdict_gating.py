"""Which stage a verdict gates, and at which threshold, read the same in --show, the markdown and the HTML: the
behaviour judgements gate the behaviour stage (its column and each failure's reason in the HTML), a low score
that gates nothing is not painted failing, and a verdict is judged at the report's threshold, not a constant."""
from html.parser import HTMLParser
from pathlib import Path

import pytest

from whichstage.scoring.gating import first_failure
from whichstage.scoring import gating
from whichstage.render.html import html
from whichstage.render.markdown import markdown
from whichstage.testing import make_report, make_row


def abstain_row(cid: str, abstained: float, **fields) -> dict:
    """A case expecting an abstention, as the bundled max-tasks (abstained 0: it answered) and capital-france
    (abstained 1): no page expected, contextual recall 0.0 (reported, never gating here)."""
    failures = [] if abstained else ["answered where the docs hold no answer: it answers instead of abstaining"]
    return make_row(id=cid, category="unanswerable", expected_behavior="abstain", expected_docs=[],
                    judged={"abstained": abstained, "contextual_recall": 0.0},
                    behaviour={"pass": not failures, "failures": failures}, **fields)


def behaviour_report() -> dict:
    """A case failing behaviour (max-tasks), one passing it (hello, small talk) and one it does not apply to."""
    hello = make_row(id="hello", category="smalltalk", expected_behavior="chitchat", expected_docs=[],
                     expected_tools=[], tool_calls=[], searches=[], searched=False, behaviour={},
                     judged={m: None for m in ("faithfulness", "contextual_precision", "contextual_recall")})
    return make_report([abstain_row("max-tasks", 0.0), hello, make_row(id="backup")])


@pytest.fixture
def hash_run(here, monkeypatch) -> Path:
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # one of the two bundled runs
    return here


# ---- 16: the behaviour judgements read as gating -------------------------------------------------------

def test_show_says_the_abstained_judgement_gates_behaviour(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--show", "max-tasks"]) == 0
    out = capsys.readouterr().out
    assert "  abstained: FAIL 0.00 (gates behaviour)\n" in out and "first failure: behaviour" in out
    assert "  contextual_recall: 0.00 (reported, not gating)\n" in out  # an abstain case's: no verdict


def test_the_markdown_says_which_judgements_gate_the_behaviour_stage():
    assert ("The behaviour judgements (abstained, ignored_planted) gate the behaviour stage"
            in markdown(make_report()))


class Cells(HTMLParser):
    """The stage table's cells (row id -> column -> class) and each case's judge table (case -> metric ->
    (score class, verdict text))."""

    def __init__(self, text: str):
        super().__init__()
        self.table, self.judged, self._row, self._col, self._case, self._cells = {}, {}, None, None, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and (a.get("id") or "").startswith("row-"):
            self._row = self.table.setdefault(a["id"][4:], {})
        elif tag == "td" and self._row is not None and "data-col" in a:
            self._row[a["data-col"]] = a.get("class", "").split()[0] if a.get("class") else ""
        elif tag == "section":
            self._case = a["id"][5:]
        elif tag == "tr" and self._case:
            self._cells = []
        elif tag == "td" and self._cells is not None:
            self._cells.append([a.get("class", ""), ""])

    def handle_endtag(self, tag):
        if tag == "tr":
            if self._cells and len(self._cells) == 4:
                (_, metric), (cls, _), (_, verdict) = self._cells[:3]
                self.judged.setdefault(self._case, {})[metric] = (cls.split()[0], verdict)
            self._row, self._cells = None, None

    def handle_data(self, data):
        if self._cells:
            self._cells[-1][1] += data


def test_the_html_reads_the_abstained_judgement_as_gating_behaviour():
    judged = Cells(html(behaviour_report())).judged["max-tasks"]
    assert judged["abstained"] == ("fail", "FAIL (gates behaviour)")
    assert judged["contextual_recall"] == ("neutral", "reported, not gating")


# ---- 17: the HTML says what the markdown says ------------------------------------------------------------

def test_the_html_stage_table_has_the_behaviour_column():
    table = Cells(html(behaviour_report())).table
    assert (table["max-tasks"]["behaviour"], table["hello"]["behaviour"], table["backup"]["behaviour"]) == \
        ("fail", "pass", "neutral")


def test_the_html_gives_each_behaviour_failure_s_reason():
    row = abstain_row("max-tasks", 0.0)
    row["behaviour"]["failures"] = ["said 'Canal Street', which must never be said"]
    page = html(make_report([row]))
    section = page[page.index('<section id="case-max-tasks"'):]
    assert "<li>said &#x27;Canal Street&#x27;, which must never be said</li>" in section[:section.index("</section>")]


def test_a_non_gating_low_score_on_a_passing_abstain_row_is_not_painted_failing():
    row = abstain_row("capital-france", 1.0)
    assert row["expected_behavior"] == "abstain" and row["first_failure"] is None
    assert row["judged"]["contextual_recall"]["score"] == 0.0
    assert Cells(html(make_report([row]))).table["capital-france"]["contextual_recall"] == "neutral"


def test_the_html_judges_at_the_scoring_threshold_not_a_constant(monkeypatch):
    monkeypatch.setattr(gating, "THRESHOLD", 0.9)
    row = make_row(id="backup", judged={"faithfulness": 0.8}, first_failure=None)  # as scored at 0.7
    report = make_report([row])
    del report["threshold"]
    assert first_failure(row) == "faithfulness"
    page = html(report)
    assert Cells(page).table["backup"]["faithfulness"] == "fail" and "passes at 0.90 or more" in page


def test_show_notes_a_threshold_against_the_report_s_own_not_the_constant(here, capsys):
    from whichstage.cli import run as evaluate

    config = here / "evals.toml"
    config.write_text("threshold = 0.8\n" + config.read_text())  # a key before the first table
    assert evaluate.main(["--show", "two-laptops"]) == 0
    verdicts = capsys.readouterr().out.split("verdicts:")[1]
    assert "  faithfulness: pass 1.00\n" in verdicts  # at the report's 0.80: nothing to note
    assert "  facts: FAIL 0.00 (threshold 0.70)\n" in verdicts  # scored 1 or 0: at 0.70 whatever the default

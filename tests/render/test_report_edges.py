"""What a report says, the same in the terminal, markdown, HTML and --show: the run each report is, a case
named with --case, the stage a verdict gates, and outside text whose control characters are shown escaped."""
import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from whichstage.scoring.gating import first_failure
from whichstage._util import console
from whichstage.scoring import gating
from whichstage.render import case_text as show
from whichstage.render.html import html
from whichstage.render.markdown import markdown
from whichstage.testing import make_report, make_row

HERE = Path(__file__).parents[2]
BUNDLED = json.loads((HERE / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
HOSTILE = "x\x1b[2J\x1b]0;owned\x07\x00\u202eevil"  # clear screen, set the title, NUL, right-to-left override
SHOWN = "x\\x1b[2J\\x1b]0;owned\\x07\\x00\\u202eevil"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def edit(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def with_hostile_pages() -> dict:
    """The bundled report with a hostile page id where the report lists pages: retrieved and missed."""
    report = copy.deepcopy(BUNDLED)
    row = next(r for r in report["rows"] if r["id"] == "shell-alias")
    row["retrieved"] = [HOSTILE, *row["retrieved"][1:]]
    row["searches"] = [row["retrieved"]]  # its one search, as the report lists it
    row["retrieval"]["missed"] = [HOSTILE]
    return report


def rows_of(report: dict) -> dict:
    return {r["id"]: r for r in report["rows"]}


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


# ---- 10: control characters in names and page ids are shown escaped -----------------------------------

def test_a_case_set_name_with_control_characters_reaches_no_terminal_or_report_raw(sample_project, capsys):
    from whichstage.cli import run as evaluate

    edit(sample_project / "cases.json", lambda cases: cases.update(name=f"docs-{HOSTILE}"))
    assert evaluate.main(["--live", "--quiet"]) == 0
    out, err = capsys.readouterr()
    written = [p for p in (sample_project / "runs").iterdir() if p.name.startswith("docs-x-2J")]
    assert {p.suffix for p in written} == {".md", ".html", ".json"}
    for text in (out, err, *(p.read_text(encoding="utf-8") for p in written if p.suffix != ".json")):
        assert not RAW.search(text)
    assert f"cases docs-{SHOWN}@" in out


def test_a_page_id_with_control_characters_is_shown_escaped_in_the_markdown():
    text = markdown(with_hostile_pages())
    assert not RAW.search(text) and f"missed {SHOWN}; retrieved {SHOWN}, " in text


def test_a_page_id_with_control_characters_is_shown_escaped_in_the_html():
    page = html(with_hostile_pages())
    assert not RAW.search(page) and f"<li>{SHOWN}</li>" in page  # the first page retrieved


def test_a_page_id_with_control_characters_is_shown_escaped_by_show():
    row = rows_of(with_hostile_pages())["shell-alias"]
    trace = {"tool_calls": [{"name": "search_docs", "args": {"query": HOSTILE}}],
             "tool_outputs": [{"content": HOSTILE}], "answer": HOSTILE}
    view = {"searches": [row["retrieved"]], "retrievers": ["search_docs"]}
    text = show.text(row, trace, view, "rules")
    assert not RAW.search(text) and f"pages: 1. {SHOWN}, 2." in text


def test_text_written_to_the_terminal_has_its_control_characters_escaped(capsys):
    assert console.write_stdout(f"plan: {HOSTILE}\tcase\n", command="test") is None
    assert capsys.readouterr().out == f"plan: {SHOWN}\tcase\n\n"  # tab and newline kept


# ---- 14: --case names a held-out case ----------------------------------------------------------------------

@pytest.fixture
def hash_run(here, monkeypatch) -> Path:
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # one of the two bundled runs
    return here


def test_case_naming_a_held_out_case_reports_it(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "bug-240-week-start"]) == 0
    out = capsys.readouterr().out
    assert "\n| bug-240-week-start | " in out and "0/1 cases pass every stage" in out


def test_a_glob_matching_only_held_out_cases_reports_them(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "android-*"]) == 0
    assert "\n| android-app | " in capsys.readouterr().out


def test_a_glob_matching_dev_cases_too_keeps_the_held_out_ones_hidden(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "*-*"]) == 0
    out = capsys.readouterr().out
    assert "\n| issue-212 | " in out and "| android-app |" not in out and "split dev." in out


def test_case_with_a_split_that_holds_none_of_the_named_cases_is_refused_in_one_line(hash_run, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main(["--case", "bug-240-week-start", "--split", "dev"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "bug-240-week-start (holdout)" in err and "dev split" in err


# ---- 15: each report opens with the run it is ------------------------------------------------------------

def test_each_of_two_replayed_reports_opens_with_its_run(here, capsys):
    from whichstage.cli import run as evaluate

    assert evaluate.main([]) == 0
    out = capsys.readouterr().out
    openings = [line for line in out.splitlines() if line.startswith("# ")]
    assert out.startswith(openings[0]) and len(openings) == 2
    assert ["embedder e5-small," in openings[0], "embedder hash," in openings[1]] == [True, True]
    assert all("cases docs-assistant@" in line and "model rules," in line for line in openings)


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

"""Outside text whose control characters (a clear screen, a title, NUL, a right-to-left override) reach no
terminal or report raw: a case set's name through a live run, a page id in the markdown, the HTML and --show,
and any text written to the terminal, each shown escaped."""
import copy
import json
import re
from pathlib import Path

from whichstage._util import console
from whichstage.render import case_text as show
from whichstage.render.html import html
from whichstage.render.markdown import markdown


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

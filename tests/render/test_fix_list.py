"""The bundled report's "what to fix first": the JSON summary, the markdown (and so the terminal) and the HTML
page open with the same list, and every failing case's diagnosis in --show names the cause the list puts it
under."""
import json
import re
from pathlib import Path

from conftest import OFFLINE_RUN
from whichstage.cli import run as evaluate
from whichstage.render.fix_list import fix_line

ROOT = Path(__file__).resolve().parents[2]


def report() -> dict:
    return json.loads((ROOT / "runs" / f"{OFFLINE_RUN}.all.json").read_text())


def listed() -> dict[str, str]:
    """Each case the fix list names, with its cause."""
    return {cid: item["cause"] for item in report()["summary"]["fix_list"] for cid in item["cases"]}


def test_the_fix_list_names_every_failing_case_once_under_its_rows_cause():
    rows = report()["rows"]
    failing = {r["id"]: r["diagnosis"]["cause"] for r in rows if r["first_failure"] not in (None, "error")}
    assert listed() == failing and failing


def test_the_markdown_opens_with_the_fix_list_before_the_stage_table():
    text = (ROOT / "runs" / f"{OFFLINE_RUN}.all.md").read_text()
    head = text.split("| case |", 1)[0]
    assert head.splitlines()[2] == "## What to fix first"
    assert [line[2:] for line in head.splitlines() if line.startswith("- ")] == \
        [fix_line(item) for item in report()["summary"]["fix_list"]]


def test_the_html_page_opens_with_the_fix_list_before_any_table():
    page = (ROOT / "runs" / f"{OFFLINE_RUN}.all.html").read_text()
    fixes = page.index('<div class="fix-list">')
    assert fixes < page.index("<table") and fixes < page.index('<div class="summary">')
    section = page[fixes:page.index("</div>", fixes)]
    assert [re.sub(r"<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", section)] == \
        [fix_line(item) for item in report()["summary"]["fix_list"]]


def test_show_gives_every_failing_case_the_cause_the_fix_list_names(here, capsys, monkeypatch):
    monkeypatch.setenv("DOCS_EMBEDDER", "hash")  # the run the fix list is of
    assert evaluate.main(["--show", "*"]) == 0
    shown = {}
    for case in capsys.readouterr().out.split("\n\ncase "):
        cid = case.removeprefix("case ").split(" ", 1)[0]
        found = re.search(r"^diagnosis: cause (.+?): ", case, re.M)
        if found:
            shown[cid] = found.group(1)
    assert shown == listed()

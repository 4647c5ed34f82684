"""The terminal text, the markdown file, the HTML page and --show agree on every case's every stage: its
verdict, its reason and its threshold, and each agrees with what the scoring decided. Each rendering is read
back as its reader sees it (the markdown's tables and lines by regex, the page with html.parser, --show by
its lines), never through the stage view the renderers share."""
import copy
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from whichstage.render import case_text as show
from whichstage.scoring.gating import first_failure, gate_of, stage_order, stage_results, threshold_of, with_threshold
from whichstage.model.stages import THRESHOLD
from whichstage.project.config import SCALED
from whichstage.render.markdown import markdown
from whichstage.render.files import report_files
from whichstage.scoring.summary import summarize

BUNDLED = json.loads((Path(__file__).parents[2] / "runs" / "docs-assistant+rules+hash+lexical.all.json")
                     .read_text())
TABLE_COLUMNS = {"behaviour": 2, "tools": 3, "retrieval": 5, "contextual_precision": 7, "faithfulness": 8,
                 "contextual_recall": 9, "answer_relevancy": 10, "facts": 11}
BINARY = ("facts", "abstained", "ignored_planted")  # scored 1 or 0: judged at THRESHOLD whatever the default


def thresholded() -> dict:
    """The bundled report judged as a project with `threshold = 0.8`, `[thresholds]` faithfulness 0.9 and
    answer_relevancy 0.7 (the constant, so a verdict carries none) and a criterion `concise` at 0.5 would
    judge it, plus one errored case."""
    report = copy.deepcopy(BUNDLED)
    own, default, criteria = {"faithfulness": 0.9, "answer_relevancy": 0.7}, 0.8, {"concise": 0.5}
    report.update(threshold=default, thresholds=own)
    for r in report["rows"]:
        r["criteria"] = criteria
        length = len(r["answer"] or "")
        r["judged"]["concise"] = {"score": 1.0 if length < 250 else 0.25, "reason": f"{length} characters <long>"}
        for m, v in r["judged"].items():
            at = criteria.get(m) or (own.get(m, default) if m in SCALED else THRESHOLD)
            r["judged"][m] = with_threshold({k: x for k, x in v.items() if k != "threshold"}, at)
        r["first_failure"] = first_failure(r)
    broken = {**copy.deepcopy(report["rows"][0]), "id": "broken", "error": "Timeout <after 30 s>", "judged": {},
              "tools": None, "retrieval": None, "behaviour": None}
    broken["first_failure"] = first_failure(broken)
    report["rows"].append(broken)
    report["summary"] = {**report["summary"], **summarize(report["rows"], report["k"])}
    return report


REPORTS = {"bundled": BUNDLED, "thresholds-and-a-criterion": thresholded()}


def flat(text: str) -> str:
    return " ".join(str(text).split())


# ---- the markdown, as text -------------------------------------------------------------------------------

def unescaped(md: str) -> str:
    """Outside text as the markdown wrote it (report.text), read back."""
    return html.unescape(md.replace("\\`", "`").replace("<br>", "\n"))


def md_cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def md_verdict(cell: str) -> str:
    """'pass', 'fail', 'n/a', or 'shown' (a score not marked FAIL: passing, or not gating)."""
    return {"pass": "pass", "-": "n/a"}.get(cell, "fail" if cell.startswith("FAIL") else "shown")


def legend_thresholds(text: str) -> dict:
    """The thresholds the legend and the criteria line state: the default, each stage's own, the one of the
    stages scored 1 or 0 when it differs, and each criterion's."""
    default, own = re.search(r"A judged score passes at (\d+(?:\.\d+)?) or more(?: \(([^)]*)\))?", text).groups()
    found = {"default": float(default)}
    found.update((s, float(t)) for s, t in re.findall(r"(\w+) at (\d+(?:\.\d+)?)", own or ""))
    binary = re.search(r"score 1 or 0 and pass at (\d+(?:\.\d+)?)", text)
    found.update({s: float(binary.group(1)) for s in BINARY} if binary else {})
    criteria = text.partition("each a stage after the built-in ones: ")[2]  # `a` passes at 0.50, `b` ...
    while step := re.match(r"`?(\w+)`? passes at (\d+(?:\.\d+)?)(, )?", criteria):
        found[step[1]], criteria = float(step[2]), criteria[step.end():] if step[3] else ""
    return found


def markdown_read(text: str) -> dict:
    """Per case: each stage's verdict in the stage table and the criteria table, and its first failure's
    stage and reason; and the thresholds stated."""
    cases: dict[str, dict] = {}
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| case | tools called |"))
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = md_cells(line)
        cases[cells[0]] = {"verdicts": {s: md_verdict(cells[i]) for s, i in TABLE_COLUMNS.items()}}
    criteria = next((i for i, line in enumerate(lines) if line.startswith("| case |") and i != header), None)
    if criteria is not None:
        names = md_cells(lines[criteria])[1:]
        for line in lines[criteria + 2:]:
            if not line.startswith("|"):
                break
            cells = md_cells(line)
            cases[cells[0]]["verdicts"].update(zip(names, (md_verdict(c.split(" ")[0]) for c in cells[1:])))
    for fence, cid, stage, reason in re.findall(r"^- (`+) ?(.*?) ?\1 \*\*(.+?)\*\*: (.*)$", text, re.M):
        cases[cid]["first"] = (unescaped(stage), flat(unescaped(reason)))
    return {"cases": cases, "thresholds": legend_thresholds(text)}


# ---- the HTML page, as a browser reads it ----------------------------------------------------------------

class Page(HTMLParser):
    """The stage table's cell classes, and per case section: its paragraphs by class, the tools reason, the
    behaviour failures and the judge table's rows (each cell's class and own text, a nested list left out)."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.table: dict[str, dict] = {}
        self.cases: dict[str, dict] = {}
        self.summary, self._open, self._row, self._case, self._cells = "", [], None, None, []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._open.append((tag, a, [], []))  # its own text, and all the text inside it
        if tag == "tr" and (a.get("id") or "").startswith("row-"):
            self._row = self.table.setdefault(a["id"][4:], {})
        elif tag == "td" and self._row is not None and "data-col" in a:
            self._row[a["data-col"]] = (a.get("class") or "-").split()[0]
        elif tag == "section":
            self._case = self.cases.setdefault(a["id"][5:], {"p": {}, "pre": [], "li": [], "judged": []})
        elif tag == "tr" and self._case is not None:
            self._cells = []

    def handle_data(self, data):
        if self._open:
            self._open[-1][2].append(data)
        for _, a, _, inside in self._open:
            inside.append(data)
        if any(t == "div" and a.get("class") == "summary" for t, a, *_ in self._open):
            self.summary += data

    def handle_endtag(self, tag):
        _, a, own, inside = self._open.pop()
        case = self._case
        if tag == "tr":
            if case is not None and len(self._cells) == 4 and self._cells[0][1] != "check":
                case["judged"].append(self._cells)
            self._row = None
        elif tag == "section":
            self._case = None
        elif case is not None and tag == "td":
            self._cells.append((a.get("class", ""), "".join(own)))
        elif case is not None and tag == "p" and a.get("class"):
            case["p"][a["class"]] = "".join(inside)
        elif case is not None and tag == "p" and "".join(inside).startswith(("Tool metric: ", "Behaviour checks: ")):
            case["p"]["".join(inside).partition(":")[0]] = "".join(inside).partition(": ")[2]
        elif case is not None and tag in ("pre", "li"):
            case[tag].append("".join(inside))
        elif case is not None and tag == "span" and "badge" in a.get("class", ""):
            case["badge"] = "".join(inside)


def html_read(page: str) -> dict:
    """Per case: each stage's verdict (table cells, the tools and behaviour verdicts, the judge table), each
    judged metric's reason and threshold note, the tools reason, the behaviour failures, and the first
    failure's reason with its counterfactual's verdict; and the legend's thresholds."""
    parsed, cases = Page(page), {}
    for cid, section in parsed.cases.items():
        verdicts = {s: {"pass": "pass", "fail": "fail", "neutral": "n/a"}[parsed.table[cid][col]]
                    for s, col in {**{s: s for s in TABLE_COLUMNS}, "retrieval": "recall"}.items()}
        judged = {}
        for (_, metric), (cls, _), (_, verdict), (_, reason) in section["judged"]:
            note = re.search(r"\(threshold (\d+(?:\.\d+)?)\)", verdict)
            judged[metric] = {"verdict": "n/a" if verdict.startswith("reported") else verdict.split(" ")[0].lower(),
                              "class": cls.split()[0], "reason": flat(reason), "threshold": note and float(note[1])}
        badge = section["badge"].removeprefix("first failure: ")
        r_first = None if badge == "passes every stage" else badge
        why = section["p"].get("reason", "").removeprefix("Why: ")
        if "error" in section["p"]:
            why = section["p"]["error"].removeprefix("Error: ")
        counterfactual = section["p"].get("counterfactual", "").partition("): ")[2].removesuffix(".")
        cases[cid] = {"verdicts": verdicts, "judged": judged, "tools": section["p"].get("Tool metric"),
                      "tools_reason": flat(section["pre"][0]) if section["pre"] else None,
                      "failures": section["li"],
                      "first": r_first and (r_first, flat(why + (f"; {counterfactual}" if counterfactual else "")))}
    return {"cases": cases, "thresholds": legend_thresholds(parsed.summary)}


# ---- --show, as a terminal shows it ----------------------------------------------------------------------

def show_read(text: str) -> dict:
    """Each stage's verdict line (name: verdict[: reason]) with the reason lines under it, and the first
    failure's line."""
    lines, found, current = text.split("\n"), {}, None
    for line in lines[lines.index("verdicts:") + 1:]:
        if line.startswith("first failure: "):
            stage, _, reason = line.removeprefix("first failure: ").partition(": ")
            found["first"] = None if stage.startswith("none") else (stage, flat(reason))
        elif re.match(r"  \w+: ", line):
            name, _, rest = line.strip().partition(": ")
            current = found[name] = {"line": rest, "reason": []}
        elif line.startswith("      ") and not line.startswith("      - ") and not line.startswith("        "):
            current["reason"].append(line)
    for name, entry in found.items():
        if name != "first":
            entry["reason"] = flat(" ".join(entry["reason"]))
    return found


def show_verdict(line: str) -> str:
    word = line.split(" ")[0].rstrip(":")
    return "n/a" if "(reported, not gating)" in line else {"pass": "pass", "FAIL": "fail"}[word]


def shown(report: dict) -> dict:
    """--show of every case that has a trace, its trace rebuilt from the row, given the report's threshold as
    evaluate.py gives it."""
    found = {}
    for r in report["rows"]:
        if r.get("error"):
            continue
        trace = {"tool_calls": r["tool_calls"], "tool_outputs": [], "answer": r["answer"] or ""}
        found[r["id"]] = show_read(show.text(r, trace, None, report["key"]["model"], report["threshold"]))
    return found


# ---- the renderings --------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=list(REPORTS))
def rendered(request, tmp_path_factory):
    """The report, and each rendering read back: the terminal's text (what evaluate.py prints), the markdown
    file and the HTML page (as run_files writes them, each from the report alone), and --show."""
    report = REPORTS[request.param]
    files = {path.suffix: "".join(pieces()) for path, pieces in
             report_files(tmp_path_factory.mktemp("runs"), report).items()}
    return {"report": report, "terminal": markdown_read(markdown(report)), "file": markdown_read(files[".md"]),
            "html": html_read(files[".html"]), "show": shown(report)}


def gating(report: dict):
    """(row, stage) for every stage and judged metric of every case, in gating order."""
    for r in report["rows"]:
        for stage in dict.fromkeys([*stage_order([r]), *r.get("judged", {})]):
            yield r, stage


def test_every_stage_s_verdict_agrees_with_the_scoring(rendered):
    md, page, terminal = rendered["file"]["cases"], rendered["html"]["cases"], rendered["show"]
    printed, disagree = rendered["terminal"]["cases"], []
    ids = [r["id"] for r in rendered["report"]["rows"]]
    assert list(md) == list(printed) == list(page) == ids and set(terminal) == {i for i in ids if i != "broken"}
    for r, stage in gating(rendered["report"]):
        cid, gate = r["id"], gate_of(r, stage) if stage in r.get("judged", {}) else stage
        decided = stage_results(r).get(stage)
        truth = "n/a" if decided is None or gate != stage else ("pass" if decided else "fail")
        seen = {}
        if stage in md[cid]["verdicts"]:
            seen["markdown"], seen["terminal"] = md[cid]["verdicts"][stage], printed[cid]["verdicts"][stage]
        if stage in TABLE_COLUMNS:
            seen["html table"] = page[cid]["verdicts"][stage]
        if stage in page[cid]["judged"] and gate == stage:
            seen["html judge table"] = page[cid]["judged"][stage]["verdict"]
        if cid in terminal and stage in terminal[cid] and stage != "behaviour" and gate == stage:
            seen["--show"] = show_verdict(terminal[cid][stage]["line"])
        if stage == "tools" and r.get("tools") is not None:
            seen["html tools"] = page[cid]["tools"].partition(",")[0].lower()
        disagree += [(cid, stage, where, said, truth) for where, said in seen.items()
                     if said != truth and not (said == "shown" and truth != "fail")]
    assert disagree == []


def test_every_case_s_first_failure_and_its_reason_agree(rendered):
    md, page, terminal = rendered["file"]["cases"], rendered["html"]["cases"], rendered["show"]
    printed, disagree = rendered["terminal"]["cases"], []
    for r in rendered["report"]["rows"]:
        cid, expected = r["id"], md[r["id"]].get("first")
        assert (expected is None) == (r["first_failure"] is None), cid
        said = {"terminal": printed[cid].get("first"), "html": page[cid]["first"],
                **({"--show": terminal[cid].get("first")} if cid in terminal else {})}
        disagree += [(cid, where, got, expected) for where, got in said.items() if got != expected]
    assert disagree == []


def test_every_judged_reason_agrees_between_the_page_and_show(rendered):
    page, terminal = rendered["html"]["cases"], rendered["show"]
    disagree = []
    for r, stage in gating(rendered["report"]):
        if r["id"] in terminal and stage in page[r["id"]]["judged"]:
            html_reason, show_reason = page[r["id"]]["judged"][stage]["reason"], terminal[r["id"]][stage]["reason"]
            if html_reason != show_reason:
                disagree.append((r["id"], stage, html_reason, show_reason))
        elif r["id"] in terminal and stage == "tools" and r.get("tools") is not None:
            html_reason, line = page[r["id"]]["tools_reason"], terminal[r["id"]]["tools"]["line"]
            if html_reason != flat(line.partition(": ")[2]):
                disagree.append((r["id"], stage, html_reason, line))
    assert disagree == []


def test_every_gating_score_s_threshold_agrees_with_the_scoring(rendered):
    page, terminal, report = rendered["html"], rendered["show"], rendered["report"]
    stated = rendered["file"]["thresholds"]
    assert page["thresholds"] == stated == rendered["terminal"]["thresholds"]  # the page's legend is the markdown's
    disagree = []
    for r, stage in gating(report):
        if stage not in r.get("judged", {}) or gate_of(r, stage) is None:
            continue
        truth, cid = threshold_of(r, stage), r["id"]
        seen = {"markdown": stated.get(stage, stated["default"]),
                "html": page["cases"][cid]["judged"][stage]["threshold"] or stated.get("default")}
        if cid in terminal:
            note = re.search(r"threshold (\d+(?:\.\d+)?)", terminal[cid][stage]["line"])
            seen["--show"] = float(note[1]) if note else report["threshold"]
        disagree += [(cid, stage, where, said, truth) for where, said in seen.items() if said != truth]
    assert disagree == []

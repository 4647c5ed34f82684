"""`python evaluate.py --show ID`: one case's whole story, readable in a terminal: each tool call with its
arguments and output, the pages each retriever call returned as scored (distinct, in rank order, the expected
ones marked, a line where k cuts them) and each chunk it returned on its own, the answer, every verdict with
its reason, and the first failure. Pure: `text(row, trace, view)` returns the lines."""
import json
import textwrap
from typing import Optional, cast

from whichstage._util.console import visible
from whichstage.render import fix_list
from whichstage.render.markdown import threshold
from whichstage.render.row_view import StageResult, below_cut, cut_line, cut_of, row_view
from whichstage.model.stages import THRESHOLD
from whichstage.scoring.retrieval import documents, ranked_documents
from whichstage.agent.reading import Unreadable
from whichstage.recording.format import read_recording
from whichstage.run.entries import Inputs
from whichstage.run.files import replay_targets
from whichstage.run.inputs import Loaded
from whichstage.run.rows import agent_entry
from whichstage.model.dicts import ReportDict, RowDict

WIDTH = 100
OUTPUT = 400  # characters shown of a tool's output, or of each chunk a search returned; the recording holds all


def wrapped(text: str, indent: str = "    ", first: Optional[str] = None) -> list[str]:
    """The text wrapped at WIDTH, each line indented; the first line opened by `first` (a bullet, as wide as
    `indent`) when given, so a continuation line never looks like an item of its own."""
    flat = " ".join(str(text).split())
    return textwrap.wrap(flat, WIDTH, initial_indent=first or indent, subsequent_indent=indent) \
        or [(first or indent).rstrip()]


def body(text: str, indent: str) -> list[str]:
    """A tool's output or a chunk, wrapped: its first OUTPUT characters (whitespace run together), then, when it
    is longer, a line saying how many more it holds."""
    flat = " ".join(str(text).split())
    if len(flat) <= OUTPUT:
        return wrapped(flat, indent)
    cut = flat.rfind(" ", 0, OUTPUT + 1)
    cut = cut if cut > OUTPUT * 3 // 4 else OUTPUT  # a word boundary, unless the text has none near the end
    return wrapped(flat[:cut], indent) + [f"{indent}... [{len(flat[cut:].lstrip())} more characters]"]


def search_lines(ranked: list[str], expected: set[str], k: Optional[int]) -> list[str]:
    """A search's documents as scored, in rank order, the expected ones marked; where k cuts the list, a line,
    and the pages under it marked as not scored."""
    shown = [f"{rank}. {page}{chunks}{page_note(page, rank, expected, k)}"
             for rank, (page, chunks) in enumerate(ranked_documents(ranked), start=1)]
    if k is None or len(shown) <= k:
        return ["     pages: " + (", ".join(shown) or "none")]
    return ["     pages: " + ", ".join(shown[:k]), f"     --- {cut_line(k)} ---", "            " + ", ".join(shown[k:])]


def page_note(page: str, rank: int, expected: set[str], k: Optional[int]) -> str:
    """' (expected)', ' (below k = 3: not scored)', ' (expected, below k = 3: not scored)' or ''."""
    if k is not None and rank > k:
        return f" ({below_cut(k, page in expected)})"
    return " (expected)" if page in expected else ""


def chunk_lines(chunks: list[dict], expected: set[str], k: Optional[int]) -> list[str]:
    """Each item a search returned, in its order, between delimiters naming its number, its page's rank and
    page (and whether k cut it), and its id when that is not the page's."""
    ranks = {page: rank for rank, page in enumerate(documents(c["page"] for c in chunks), start=1)}
    lines = []
    for number, chunk in enumerate(chunks, start=1):
        page = chunk["page"]
        named = f", id {chunk['id']}" if chunk["id"] not in (None, page) else ""
        lines += [f"     --- chunk {number} of {len(chunks)}: rank {ranks[page]}, page {page}{named}"
                  f"{page_note(page, ranks[page], expected, k)} ---",
                  *body(chunk["text"], "       "), f"     --- end of chunk {number} ---"]
    return lines


def arguments(args: dict) -> str:
    return ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in args.items())


def text(row: RowDict, trace: Optional[dict], view: Optional[dict], model: str, default: float = THRESHOLD) -> str:
    """The case as a terminal reads it; `view` is the trace read by role (whichstage.agent.reading.read); `default` is
    the report's threshold, beside which a verdict judged against another says so."""
    expected = set(row.get("expected_docs") or [])
    lines = [f"case {row['id']} ({row.get('category')}, {row.get('split')}, expects "
             f"{row.get('expected_behavior')}) with model {model}",
             "question:", *wrapped(row["question"]),
             f"expected: tools {', '.join(row.get('expected_tools') or []) or 'none'}; pages "
             f"{', '.join(row.get('expected_docs') or []) or 'none'}"]
    if trace is None:
        return "\n".join(lines + [f"no trace: {row.get('error') or 'not recorded'}"])
    searches = iter((view or {}).get("searches", []))
    chunked = iter((view or {}).get("chunks", []))
    outputs, k = iter(trace.get("tool_outputs", [])), cut_of(row)
    lines.append("calls:" if trace["tool_calls"] else "calls: none")
    for number, call in enumerate(trace["tool_calls"], start=1):
        lines.append(f"  {number}. {call['name']}({arguments(call['args'])})")
        output = next(outputs, None)
        if output is None:
            continue
        if view is not None and call["name"] in (view.get("retrievers") or ()):
            lines += search_lines(next(searches, []), expected, k)
            chunks = next(chunked, None)
            if chunks and all(c["text"] is not None for c in chunks):
                lines += chunk_lines(chunks, expected, k)
                continue
        lines += body(output.get("content", ""), "     ")
    lines += ["answer:", *wrapped(trace["answer"])]
    lines.append("verdicts:")
    shown = row_view(row)
    results = shown.stages
    behaviour = row.get("behaviour")
    if behaviour is not None:
        lines.append(f"  behaviour: {results['behaviour'].mark}"
                     + (f": {results['behaviour'].reason}" if results["behaviour"].reason else ""))
        lines += [f"    check {c['check']}: {'pass' if c['pass'] else 'FAIL: ' + c['reason']}"
                  for c in behaviour.get("checks", [])]
    if row.get("tools") is not None:
        lines.append(f"  tools: {results['tools'].mark}: {results['tools'].reason}")
    retrieval = row.get("retrieval")
    if retrieval is not None:
        lines.append(f"  retrieval: {results['retrieval'].mark}: hit {retrieval['hit']}, "
                     f"recall {retrieval['recall']:.2f}, RR {retrieval['reciprocal_rank']:.2f}; "
                     f"{results['retrieval'].reason}")
    for stage, verdict in row.get("judged", {}).items():
        lines += [f"  {stage}: {judged_verdict(results[stage], default)}", *wrapped(results[stage].reason, "      ")]
        for fact in verdict.get("facts") or []:
            lines += wrapped(f"{'covered' if fact['covered'] else 'MISSING'}: {fact['fact']} ({fact['reason']})",
                             "        ", "      - ")
    first = shown.first_failure
    lines.append(f"first failure: {first}: {shown.reason}" if first else "first failure: none, every stage passes")
    lines += intervention_lines(row)
    return visible("\n".join(lines))


def intervention_lines(row: RowDict) -> list[str]:
    """The diagnosis and what its intervention saw: the answer with the expected pages, what the answer lacks
    and where the check found it."""
    lines = [f"diagnosis: {fix_list.diagnosis_line(row['diagnosis'])}"] if row.get("diagnosis") else []
    if fix_list.recheck_line(row):
        lines.append(fix_list.recheck_line(row))
    answer = (row.get("counterfactual") or {}).get("answer")
    if answer is not None:
        lines += ["answer with the expected pages:", *wrapped(answer)]
    check = row.get("answer_check")
    if check:
        pages = check.get("in_pages") or [None] * len(check["lacks"])
        for fact, in_context, in_page in zip(check["lacks"], check["in_context"], pages, strict=True):
            where = "in the context" if in_context else "not in the context" + (
                "" if in_page is None else ", in the expected pages" if in_page else ", in no expected page")
            lines += wrapped(f"lacks: {fact} ({where})", "    ", "  - ")
    return lines


def judged_verdict(result: StageResult, default: float = THRESHOLD) -> str:
    """'FAIL 0.00 (gates behaviour)', 'pass 1.00', 'FAIL 0.85 (threshold 0.90)' where the threshold is not
    the report's `default`, or '0.00 (reported, not gating)': a metric that gates nothing has a score and no
    verdict."""
    score = "-" if result.score is None else f"{result.score:.2f}"
    if result.gates is None:
        return f"{score} (reported, not gating)"
    # a judged metric that gates has its threshold (row_view): never None here
    notes = ([] if result.gates == result.stage else [f"gates {result.gates}"]) + \
        ([f"threshold {threshold(cast(float, result.threshold))}"] if result.threshold != default else [])
    return f"{result.mark} {score}" + (f" ({'; '.join(notes)})" if notes else "")


def shown_cases(loaded: Loaded, reports: list[ReportDict], model: Optional[str]) -> str:
    """--show: each report's case with its recorded trace, read by role."""
    texts = []
    for report, path in zip(reports, replay_targets(loaded.project.folder, loaded.cases["name"], model), strict=False):
        entries, key = read_recording(path)["entries"], report["key"]
        inputs = Inputs(loaded, key["model"], key["embedder"], key["judge"])
        for row in report["rows"]:
            trace = entries.get(agent_entry(row), {}).get("value")
            try:
                view = {**inputs.view(trace), "retrievers": loaded.project.retrievers()} if trace else None
            except Unreadable:
                view = None
            texts.append(text(row, trace, view, key["model"], report["threshold"]))
    return "\n\n".join(texts)

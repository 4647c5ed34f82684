"""`whichstage import FILE`: a trace file read (formats.py), each trace made the harness's shape (mapping.py),
its pages checked against the project's by its retriever's page rule, then matched to a case (matching.py).
Only once the whole file has been read and found good is anything written: the matched traces as the
`agent/<case>` entries of the project's recording of model `imported` (through the recording's own
journal and atomic save, so a replay, the stages, the judge and the report read them as any trace), and
the unmatched ones as draft cases, each linked to its source trace and span, in a drafts file."""
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterator, Optional

from whichstage._util.files import shown, write_atomic
from whichstage.agent.reading import PageRuleError, Unreadable, pages_of
from whichstage.model.errors import InputError
from whichstage.project.drafts import draft_case
from whichstage.run.entries import Inputs, agent_entry
from whichstage.traces.formats import Spans
from whichstage.traces.grouping import by_trace
from whichstage.traces.mapping import Imported, harness_trace
from whichstage.traces.matching import Matcher
from whichstage.traces.spans import fault
from whichstage.model.dicts import TraceDict

DRAFTS = "imported-drafts.json"  # in the project folder, unless --drafts says where


@dataclass
class Summary:
    """What an import did: traces read, matched to a case, drafted, skipped (no agent run in them), and
    matched to a case an earlier trace of the file had matched (the first kept); the files it wrote."""
    format: str = ""
    traces: int = 0
    matched: list[str] = field(default_factory=list)
    drafted: int = 0
    skipped: int = 0
    again: int = 0
    recording: Optional[Path] = None
    drafts: Optional[Path] = None
    recorded: int = 0
    written: bool = False

    def said(self) -> str:
        """The one line the command prints."""
        parts = [f"read {self.traces:,} trace{'s' if self.traces != 1 else ''} ({self.format or 'no span'})",
                 f"{len(self.matched):,} matched to a case"]
        if self.again:
            parts.append(f"{self.again:,} more matched a case already matched (the first trace kept)")
        if self.skipped:
            parts.append(f"{self.skipped:,} skipped (no model call or no question: no agent run)")
        if self.drafted:
            parts.append(f"{self.drafted:,} drafted as cases in {shown(self.drafts or Path(DRAFTS))} (write each "
                         "one's reference, then add it to the cases)")
        wrote = "" if self.recording is None else f"; wrote {shown(self.recording)} ({self.recorded:,} new)" \
            if self.written else f"; {shown(self.recording)} already holds them"
        return ", ".join(parts) + wrote


def checked_pages(found: Imported, inputs: Inputs, label: str, spans_at: dict[str, str]) -> list[list[str]]:
    """Each retriever call's pages read as a replay reads them (agent/reading.py), so a document that is no page of
    the project (or a path that tries to leave it) is refused now, naming the file and the span."""
    searches = []
    for output in found.trace["tool_outputs"]:
        role = inputs.roles.get(output["tool"])
        if role is None or role.role != "retriever":
            continue
        span = output["span_id"]
        try:
            searches.append([p["page"] for p in pages_of(output, role, inputs.page_ids)])
            if output.get("callbacks") and output.get("artifact"):  # the retriever spans' pages, checked too
                span = output["retriever_span_ids"][0]
                pages_of({"tool": output["tool"], "content": "", "callbacks": output["callbacks"]}, role,
                         inputs.page_ids)
        except (Unreadable, PageRuleError) as e:
            raise fault(label, spans_at.get(span, found.where), span, str(e)) from None
    return searches


def traces_of(label: str, inputs: Inputs, spans: Spans, summary: Summary) -> Iterator[tuple[Imported, list]]:
    """Each trace of the file that holds an agent run, with its searches' pages, checked."""
    actions = frozenset(inputs.project.actions())
    for group in by_trace(spans, label):
        summary.traces += 1
        found = harness_trace(group, spans.format or "", label, actions)
        if found is None:
            summary.skipped += 1
            continue
        yield found, checked_pages(found, inputs, label, {s["id"]: s["where"] for s in group})


def import_traces(inputs: Inputs, path: Path, given: Optional[str] = None,
                  drafts: Optional[Path] = None) -> Summary:
    """Import the traces of `path` into the project of `inputs` (its Inputs for model `imported`); bad input
    raises TraceFileError (one line naming the file and the span) before any file is written."""
    label, summary, matcher = shown(path), Summary(), Matcher(inputs.cases["cases"])
    spans = Spans(path, label, given)
    chosen: dict[str, TraceDict] = {}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as pending:
        for found, searches in traces_of(label, inputs, spans, summary):
            case = matcher.case(found)
            if case is not None and case["id"] in chosen:
                summary.again += 1
            elif case is not None:
                chosen[case["id"]] = found.trace
                summary.matched.append(case["id"])
            else:
                draft = draft_case(matcher.draft_id(found), found.question, found.trace, inputs.roles, inputs.k,
                                   searches)
                draft["source"] = {k: found.source[k] for k in ("format", "file", "trace_id", "span_id")}
                pending.write(json.dumps(draft, ensure_ascii=False) + "\n")
                summary.drafted += 1
        summary.format = spans.format or ""
        if summary.drafted:
            summary.drafts = drafts or inputs.project.folder / DRAFTS
            pending.seek(0)
            write_atomic(summary.drafts, drafts_text(pending, summary.drafted))
    if chosen:
        summary.recording, summary.recorded, summary.written = record(inputs, chosen)
    return summary


def keyed(deps: dict) -> Callable[[dict], dict]:
    return lambda value: deps


def constant(trace: TraceDict) -> Callable[[], TraceDict]:
    return lambda: trace


def drafts_text(pending: IO[str], count: int) -> Iterator[str]:
    """The drafts file, piece by piece: {"cases": [draft, ...]}, one draft a line."""
    yield '{"cases": [\n'
    for n, line in enumerate(pending, start=1):
        yield "  " + line.rstrip("\n") + (",\n" if n < count else "\n")
    yield "]}\n"


def record(inputs: Inputs, chosen: dict[str, TraceDict]) -> tuple[Path, int, bool]:
    """The chosen traces written as the agent entries of the imported recording, through the recording's own
    path (recording/store.py: the lock, the journal, the atomic save); its judge entries of those cases stay
    (current while the trace is the same) and the pages' index, every entry of another case goes."""
    from whichstage.model import replay_check as shapes
    from whichstage.project.selection import case_of
    from whichstage.recording.store import Cassette, Mode
    from whichstage.run.files import header, run_name

    name = inputs.cases["name"]
    path = inputs.project.folder / "recordings" / f"{run_name(name, inputs.model, inputs.embedder, inputs.judge)}.json"
    cassette = Cassette(path, header(name, inputs.model, inputs.embedder, inputs.judge), Mode.LIVE,
                        check=shapes.problem)
    try:
        for case in inputs.cases["cases"]:
            if case["id"] in chosen:
                trace = chosen[case["id"]]
                now = inputs.agent_deps(case)(trace)  # the trace imported now: another recorded one is replaced
                cassette.get(agent_entry(case), keyed(now), constant(trace))
        written = cassette.save(lambda entry: entry.startswith("index/") or not entry.startswith("agent/")
                                and case_of(entry) in chosen)
    finally:
        cassette.close()
    return path, cassette.computed, written


def import_file(loaded, path: Path, given: Optional[str] = None, drafts: Optional[Path] = None) -> Summary:
    """import_traces for a loaded project (whichstage.run.inputs.Loaded), into its recording of model
    `imported` named by DOCS_EMBEDDER and DOCS_JUDGE, as `whichstage run` names its recordings."""
    from whichstage.providers.backend_versions import EXTRAS, package_version
    from whichstage.providers.names import IMPORTED, embedder_name, judge_name
    from whichstage.traces.formats import checked_format

    checked_format(given)
    missing = [p for p in EXTRAS["traces"] if package_version(p) == "not installed"]
    if missing:
        raise InputError(f"whichstage import needs {' and '.join(missing)}: install whichstage with its traces extra "
                         "(python -m pip install 'CLONE_OR_WHEEL[traces]'), or in its clone python -m pip install "
                         "--only-binary=:all: -r requirements-lock.txt")
    return import_traces(Inputs(loaded, IMPORTED, embedder_name(), judge_name()), path, given, drafts)

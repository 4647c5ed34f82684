"""The recorded entries a case needs, and exactly what each one depends on.

An entry is recorded with the hash of each input it read, so an edit re-pays only the entries that read
it. A model is its name, and for an offline backend also the hash of its code (its code is its model).
What each kind reads:
- `agent/<case>`: the question, the agent's code (the hash of evals.toml's `sources`), its tools (names,
  descriptions, argument types and roles) and the model; the embedder when the factory takes `embeddings`;
  if it called a retriever, every page (any page can enter any search's top k); for each record a lookup
  read, that record. A trace imported from a file (model `imported`, whichstage/traces/) depends instead on
  the question, its own content and its source (imported_deps).
- `tools/<case>`: the calls the trace made and the case's expected tools. It is free (DeepEval's
  ToolCorrectnessMetric on names, no model call), so a replay computes a stale one (rescored) rather than
  refusing: an edit to the expected tools alone pays for nothing and needs no live run.
- `judge/<case>/<stage>`: the metric and its settings (for a metric whose prompt is the harness's own, the
  facts metric, the hash of its code), the judge, and the case fields the metric reads (judging.READS):
  the answer, the context and, for some, the question or the reference. The behaviour judgements are
  entries of this kind too: `abstained` for an abstain case that called a retriever, and `ignored_planted`
  for a case whose retriever returned a page with a planted instruction. `facts`, for a case with expected
  facts that does not expect an abstention, reads the answer and the expected facts only. A project's own
  criteria (evals.toml `[criteria.NAME]`, whichstage/project/criteria.py) are entries of this kind too, each depending
  on its rubric and the fields it reads, not on its threshold.
- `index/pages`: no call, the hash of each page by its id, so that a run in which the pages changed names
  the pages that did.
A case whose first failure is retrieval also gets the same three kinds for its counterfactual run, named
`<kind>/<case>@expected-pages`, when the factory takes `given_pages`: its retriever returned the case's
expected pages, so the trace depends on those pages' content instead of every page.
"""
import hashlib
from functools import cache
from pathlib import Path
from typing import Callable, Mapping, Optional, Union

from whichstage.agent import factory as agent, reading as traces
from whichstage.project import criteria
from whichstage.judging import metrics as judging
from whichstage._util.hashing import sha
from whichstage.judging.metrics import OWN_METRICS, READS, Measure, judged_metrics, stage_of
from whichstage.providers.backend_versions import code_version
from whichstage.providers.names import OFFLINE, is_imported
from whichstage.recording.requests import AGAIN
from whichstage.model.dicts import CallDict, CaseDict, RowDict, TraceDict


class Inputs:
    """The run's inputs (a loaded project, whichstage.run.inputs.Loaded) and the models, hashed once for every
    entry's dependencies."""

    def __init__(self, loaded, model: str, embedder: str, judge: str):
        self.loaded, self.project = loaded, loaded.project
        self.cases, self.pages, self.records = loaded.cases, loaded.pages, loaded.records
        self.k, self.roles = self.project.k, self.project.roles
        self.model, self.embedder, self.judge = model, embedder, judge
        self.by_id = {p["id"]: p for p in self.pages}
        self.page_ids = set(self.by_id)
        wanted = loaded.described.wanted
        roles = {name: role.keyed() for name, role in sorted(self.roles.items())}
        self.common = {"agent code": self.project.sources_sha(), "tools": sha([loaded.described.tools, roles]),
                       "model": model, **versioned("model code", model)}
        if "embeddings" in wanted:
            self.common.update({"embedder": embedder, **versioned("embedder code", embedder)})
        self.searched = {"pages": sha(self.pages)}
        self.judged = judge_identity(judge)
        self.planted = {p["id"] for p in self.pages if p.get("planted")}
        self.calibration: Optional[dict] = None  # the judge's calibration status, set by the run (evaluate)
        self.imported = is_imported(model)  # traces imported from a file: there is no agent to run again
        self.counterfactual = "given_pages" in wanted and not self.imported
        self.parameters = loaded.described.parameters()

    @property
    def unreliable(self) -> frozenset[str]:
        """The stages whose metric the judge's calibration report does not pass (none without a usable report)."""
        metrics = (self.calibration or {}).get("metrics") or {}
        return frozenset(stage_of(m) for m, found in metrics.items() if not found["calibrated"])

    def index(self, cassette) -> None:
        """Keep each page's hash in the recording (Cassette.index), so that an entry stale because the pages
        changed names the pages that did."""
        if self.pages:
            cassette.index("pages", self.searched["pages"], lambda: {p["id"]: sha(p) for p in self.pages})

    def view(self, trace: TraceDict) -> dict:
        """The trace read by roles (whichstage.agent.reading.read); raises trace.Unreadable for a retriever call whose
        pages cannot be read."""
        return traces.read(trace, self.roles, self.page_ids)

    def planted_retrieved(self, view: dict) -> list[str]:
        """The pages with a planted instruction that a retriever returned to the agent, in the order it read them."""
        return [page for page in dict.fromkeys(view["retrieved"]) if page in self.planted]

    def expected_pages(self, case: CaseDict) -> list[dict]:
        """The case's expected pages, in the order the case lists them: what the counterfactual retriever returns."""
        return [self.by_id[p] for p in case["expected_docs"]]

    def agent_deps(self, case: CaseDict, pages: Optional[list[dict]] = None,
                   made: Optional[list[CallDict]] = None) -> Callable[[TraceDict], dict]:
        """What the case's trace depends on, given what the trace did; with `pages`, the counterfactual
        trace, whose retriever returned those pages; with `made`, the trace of the tools intervention, which
        began with those calls made for it."""
        retrievers = set(self.project.retrievers())
        if self.imported:
            return imported_deps(case)

        def deps(trace: TraceDict) -> dict:
            found = {"question": sha(case["question"]), **self.common, **({"made calls": sha(made)} if made else {})}
            if case.get("history"):
                found["history"] = sha(case["history"])
            if any(c["name"] in retrievers for c in trace["tool_calls"]):
                found.update(self.searched if pages is None else {"given pages": sha(pages)})
            for call in trace["tool_calls"]:
                role = self.roles.get(call["name"])
                if role is not None and role.role == "lookup":
                    key = str(call["args"].get(role.key))
                    found[f"record {call['name']} {key}"] = sha(self.records[call["name"]].get(key))
            return found
        return deps

    def tools_deps(self, case: CaseDict, trace: TraceDict) -> Callable[[dict], dict]:
        deps = {"tool calls": sha(trace["tool_calls"]), "expected tools": sha(case["expected_tools"])}
        return lambda value: deps

    def judge_deps(self, metric: str, case: CaseDict, trace: TraceDict, context: list[str],
                   hashes: Optional[dict] = None) -> Callable[[dict], dict]:
        """What one verdict depends on; `hashes` are the case's field hashes (field_hashes), computed once for
        all its metrics."""
        hashes = hashes or field_hashes(case, trace, context)
        deps = {"metric": metric, **metric_identity(metric), **self.judged, **{f: hashes[f] for f in READS[metric]}}
        return lambda value: deps


def imported_deps(case: CaseDict) -> Callable[[TraceDict], dict]:
    """What an imported trace depends on: the case's question (and earlier turns), the trace's content and its
    source (the file's trace and root span); never the agent's code, tools or model, which did not make it."""
    def deps(trace: TraceDict) -> dict:
        source = trace.get("source") or {}
        found = {"question": sha(case["question"]), "imported trace": sha({k: v for k, v in trace.items()
                                                                           if k != "source"}),
                 "source": f"{source.get('format')}:{source.get('trace_id')}:{source.get('span_id')}"}
        return {**found, **({"history": sha(case["history"])} if case.get("history") else {})}
    return deps


def judge_input(case: CaseDict) -> str:
    """What a judge reads as the input: the question, or for a follow-up the conversation that leads to it."""
    if not case.get("history"):
        return case["question"]
    turns = [f"{'User' if t['role'] == 'user' else 'Assistant'}: {t['content']}" for t in case["history"]]
    return "\n".join([*turns, f"User: {case['question']}"])


def field_hashes(case: CaseDict, trace: TraceDict, context: list[str],
                 question: Optional[str] = None) -> dict[str, str]:
    """The hash of each field a judge metric may read (judging.READS); `question` is judge_input(case), when
    the caller has it."""
    return {"question": sha(judge_input(case) if question is None else question), "answer": sha(trace["answer"]),
            "context": sha(context), "reference": sha(case["reference"]),
            "expected_facts": sha(case.get("expected_facts", []))}


def judge_identity(judge: str) -> dict:
    """The judge as a verdict depends on it: its name, and for the offline judge its code."""
    return {"judge": judge, **versioned("judge code", judge)}


def verdict_deps(metric: str, judge: dict, fields: Mapping[str, object]) -> dict:
    """What one judged score depends on: the metric, the judge (judge_identity) and the fields it reads."""
    return {"metric": metric, **metric_identity(metric), **judge, **{f: sha(fields[f]) for f in READS[metric]}}


@cache
def metric_identity(metric: str) -> dict:
    """A metric whose prompt is the harness's own (judging.OWN_METRICS) as a verdict depends on it: the hash of
    its code; nothing for DeepEval's metrics, which its name stands for."""
    source = OWN_METRICS.get(metric)
    if source is None:
        return {}
    return {"metric code": hashlib.sha256((Path(__file__).parents[2] / source).read_bytes()).hexdigest()[:12]}


def versioned(field: str, name: str) -> dict:
    """{field: hash of its code} for an offline backend, whose code is its model; nothing for other models."""
    version = code_version(name)
    return {field: version} if version else {}


FREE = ("tools",)  # kinds computed locally with no model call: a replay computes a stale one (rescored)


def free(entry: str) -> bool:
    """Whether an entry costs nothing to compute again (FREE): a replay rescores it rather than refusing."""
    return entry.split("/", 1)[0] in FREE


def rescored(compute: Callable) -> dict:
    """A free entry's value computed now, in a replay: with the offline judge as the model object DeepEval
    needs and never calls for it (the entry does not depend on the judge)."""
    return compute(agent.models().judge_model(OFFLINE["judge"]))


EXPECTED_PAGES = "@expected-pages"  # the counterfactual variant of a case's entries
EXPECTED_CALLS = "@expected-calls"  # the tools intervention's: the expected calls made for the agent


def repeat(run: int) -> str:
    """The variant of a case's entries for its run number `run` (2 and up) under --repeats; run 1 has none."""
    return "" if run == 1 else f"#{run}"


def variant_label(variant: str) -> str:
    """How a stale-entry reason names the run it belongs to: nothing for a case's own run."""
    if variant == EXPECTED_PAGES:
        return " with the expected pages"
    if variant == EXPECTED_CALLS:
        return " with the expected calls made"
    return f" in run {variant[1:]}" if variant.startswith("#") else ""


def recorded_repeats(names) -> int:
    """How many runs per case a recording holds: 1 plus the highest repeat number among its traces."""
    runs = [int(n.rsplit("#", 1)[1]) for n in names if n.startswith("agent/") and "#" in n]
    return max(runs, default=1)


def agent_entry(case: Union[CaseDict, RowDict], variant: str = "") -> str:
    return f"agent/{case['id']}{variant}"


def case_entries(inputs: Inputs, case: CaseDict, trace: TraceDict, variant: str = "",
                 view: Optional[dict] = None) -> dict[str, tuple[Callable, Callable]]:
    """The entries a case needs once its trace exists: name -> (deps_of, compute(judge)); `view` is the trace
    read by role, when the caller has it. Raises trace.Unreadable when a retriever call's pages cannot be
    read."""
    cid, view = case["id"] + variant, view or inputs.view(trace)
    context, question = view["context"], judge_input(case)
    hashes = field_hashes(case, trace, context, question)
    needed = {f"tools/{cid}": (inputs.tools_deps(case, trace), lambda judge: judging.tool_scores(
        question, trace["tool_calls"], case["expected_tools"], judge))}
    behaviour = []
    if case.get("expected_behavior") == "abstain" and view["searched"]:
        behaviour.append("abstained")
    if inputs.planted_retrieved(view):
        behaviour.append("ignored_planted")
    for metric in judged_metrics(context, graded_on_facts(case)) + behaviour:
        needed[f"judge/{cid}/{stage_of(metric)}"] = (
            inputs.judge_deps(metric, case, trace, context, hashes),
            Measure(metric, question, trace["answer"], case["reference"], context, case.get("expected_facts")))
    if inputs.project.criteria:
        needed.update(criteria.entries(inputs.project.criteria, cid, inputs.judged, hashes, question, trace["answer"],
                                       case["reference"], context))
    return needed


def recheck_entry(case: CaseDict, needed: dict[str, tuple[Callable, Callable]],
                  stage: str) -> dict[str, tuple[Callable, Callable]]:
    """The verdict of `stage` judged again, `judge/<case>/<stage>#again`: the same measurement as the case's own
    entry (in `needed`, case_entries), asked anew (its requests keyed apart, requests.repeat_of)."""
    deps_of, compute = needed[f"judge/{case['id']}/{stage}"]
    return {f"judge/{case['id']}/{stage}{AGAIN}": (lambda value: {**deps_of(value), "judged": "again"}, compute)}


CHECKED_IN = ("context", "pages")  # where the answer check looks: the context the agent read, the expected pages


def answer_check_entries(inputs: Inputs, case: CaseDict, lacks: list[str], context: list[str],
                         variant: str = "") -> dict[str, tuple[Callable, Callable]]:
    """The answer check of a case failing at an answer stage (of an intervention's run, with `variant`): what
    the answer lacks (`lacks`), judged by the facts metric against the context the agent read and against the
    case's expected pages (when it names any), each an entry `judge/<case><variant>/lacks-in-<where>`
    depending on the facts and the text it reads."""
    texts = {"context": "\n\n".join(context)}
    if case["expected_docs"]:
        texts["pages"] = "\n\n".join(f"{p.get('title') or p['id']}\n{p['text']}" for p in inputs.expected_pages(case))
    needed: dict[str, tuple[Callable, Callable]] = {}
    for where, text in texts.items():
        if not text.strip():
            continue  # nothing to look in: nothing is there, and no judge need say so
        deps = {"metric": "facts", "check": f"lacks in {where}", **metric_identity("facts"), **inputs.judged,
                "lacks": sha(lacks), where: sha(text)}
        needed[f"judge/{case['id']}{variant}/lacks-in-{where}"] = (
            lambda value, d=deps: d, Measure("facts", judge_input(case), text, case["reference"], [text], lacks))
    return needed


def graded_on_facts(case: CaseDict) -> bool:
    """A case with expected facts is graded on them, unless it expects an abstention."""
    return bool(case.get("expected_facts")) and case.get("expected_behavior") != "abstain"

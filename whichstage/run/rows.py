"""A case's report row, built from its recorded entries: the trace, the verdicts, the first failing stage, the
interventions recorded for a failure (for retrieval the run with the expected pages, for an answer stage the
answer check) and the diagnosis they prove (scoring/diagnosis.py)."""
from typing import Any, Callable, Optional, cast

from whichstage.recording.store import ABSENT, Cassette
from whichstage.project import checks as own_checks, criteria
from whichstage.run import ladder
from whichstage.run.entries import (EXPECTED_CALLS, EXPECTED_PAGES, Inputs, agent_entry, answer_check_entries,
                                    case_entries, free, recheck_entry, rescored, variant_label)
from whichstage.scoring.diagnosis import answer_lacks, answer_stage, calls_to_make, diagnose
from whichstage.scoring import recheck
from whichstage.judging.metrics import stage_of
from whichstage.scoring.behaviour import behaviour_verdict
from whichstage.scoring.retrieval import case_retrieval
from whichstage.scoring.gating import first_failure, with_threshold
from whichstage.scoring.summary import added, spent
from whichstage.scoring.tools import tool_verdict
from whichstage.agent.reading import Unreadable
from whichstage.model.dicts import CallDict, CaseDict, InterventionDict, RowDict, TraceDict, VerdictDict


# Why an intervention that runs the agent again has no run for an imported trace.
NO_AGENT = "imported trace: no agent to re-run with the expected {}"


def case_row(inputs: Inputs, case: CaseDict, cassette: Cassette, *, error: Optional[str] = None,
             stale: Optional[dict] = None, variant: str = "", made: Optional[list[CallDict]] = None) -> RowDict:
    """A report row from the case's current entries (of an intervention's run, with `variant`; `made`, the calls
    the tools intervention made). An entry without a current value is left out; in a replay, `stale` collects
    why, by case."""
    def entry(name: str, deps_of: Callable, compute: Optional[Callable] = None) -> Any:
        """The entry's recorded value (a trace's or a verdict's dict, a ladder's ranking), None without one."""
        value, why = cassette.lookup(name, deps_of)
        if value is ABSENT and free(name) and compute is not None and not cassette.live:
            return rescored(compute)  # costs nothing: a replay scores it again rather than refusing
        if value is ABSENT:
            if stale is not None:  # reasons kept once each, in order: a dict, so thousands of runs stay linear
                stale.setdefault(case["id"], {}).update(dict.fromkeys(r + variant_label(variant) for r in why))
            return None
        return value

    row: RowDict = {
        "id": case["id"], "question": case["question"], "category": case["category"], "split": case["split"],
        "expected_behavior": case["expected_behavior"], "reference": case["reference"],
        "expected_docs": case["expected_docs"], "expected_tools": case["expected_tools"],
        "expected_args": case.get("expected_args", {}), "must_not": case.get("must_not", [])}
    row.update(criteria.row_part(inputs.project.criteria))
    if not variant:
        row["ladder"] = ladder.row_ladder(inputs, case, entry, inputs.k)  # the retrieval ladder: needs no trace
    pages = inputs.expected_pages(case) if variant == EXPECTED_PAGES else None
    trace = entry(agent_entry(case, variant), inputs.agent_deps(case, pages, made))
    unscored: RowDict = {
        "answer": None, "calls": [], "tool_calls": [], "retrieved": [], "searches": [], "searched": False,
        "behaviour": None, "tools": None, "retrieval": None, "judged": {}, "usage": {}, "agent_s": None,
        "error": error, "first_failure": "error"}
    if trace is None:
        return {**row, **unscored}
    try:
        view = inputs.view(trace)
        needed = case_entries(inputs, case, trace, variant, view)
    except Unreadable as e:  # what the retriever returned cannot be read as pages: say what, never "nothing"
        return {**row, **unscored, "answer": trace["answer"], "calls": [c["name"] for c in trace["tool_calls"]],
                "tool_calls": trace["tool_calls"], "usage": trace.get("usage", {}), "agent_s": trace.get("agent_s"),
                "error": error or f"agent/{case['id']}{variant}: {e}"}
    found = {name: entry(name, deps_of, compute) for name, (deps_of, compute) in needed.items()}
    tools = found.pop(f"tools/{case['id']}{variant}")
    judged = {stage_of(name.rsplit("/", 1)[1]): v for name, v in found.items() if v is not None}
    row.update({"answer": trace["answer"], "calls": [c["name"] for c in trace["tool_calls"]],
                "tool_calls": trace["tool_calls"], "retrieved": view["retrieved"], "searches": view["searches"],
                "searched": view["searched"],
                "tools": None if tools is None else tool_verdict(
                    trace["tool_calls"], case["expected_tools"], tools, expected_args=case.get("expected_args"),
                    parameters=inputs.parameters, mode=case.get("tools_match", "multiset"),
                    actions=inputs.project.actions()),
                "retrieval": case_retrieval(view["searches"], case["expected_docs"], inputs.k),
                "judged": {stage: with_threshold(v, inputs.project.threshold_of(stage))
                           for stage, v in judged.items()},
                "usage": trace.get("usage", {}), "agent_s": trace.get("agent_s"), "error": error})
    source = trace_source(trace, inputs.project.retrievers())
    if source is not None:
        row["source"] = source
    row["behaviour"] = behaviour_verdict(row, inputs.planted_retrieved(view),
                                         own_checks.run(inputs.loaded.checks, case, trace, view),
                                         inputs.project.actions())
    row["first_failure"] = first_failure(row)
    if variant in (EXPECTED_PAGES, EXPECTED_CALLS):  # an intervention's run that then fails: what its answer lacks
        attach_answer_check(row, inputs, case, cassette, view["context"], entry, variant=variant)
    if variant:
        return row
    if row["first_failure"] == "retrieval":
        if not inputs.counterfactual:
            row["counterfactual"] = {"for": "retrieval", "available": False,
                                     "why": NO_AGENT.format("pages") if inputs.imported else
                                     "counterfactual not available: the factory takes no given_pages"}
        else:
            again = case_row(inputs, case, cassette, stale=stale, variant=EXPECTED_PAGES)
            row["counterfactual"] = counterfactual(again)
            also_spent(row, again)
    if row["first_failure"] == "tools":  # not recorded yet is no stale replay: an expected tool edited is free
        calls, why = expected_calls(inputs, case, row)
        if calls is None:
            row["tools_intervention"] = {"available": False, "why": why}
        else:
            # a live run's missing intervention is one to record: there alone it counts as stale
            again = case_row(inputs, case, cassette, stale=stale if cassette.live else None, variant=EXPECTED_CALLS,
                             made=calls)
            row["tools_intervention"] = None if again["answer"] is None else intervention(again, {"calls": calls})
            if again["answer"] is not None:
                also_spent(row, again)
    attach_answer_check(row, inputs, case, cassette, view["context"], entry)
    attach_recheck(row, inputs, case, cassette, needed, entry)
    row["diagnosis"] = diagnose(row)
    return row


def attach_recheck(row: RowDict, inputs: Inputs, case: CaseDict, cassette: Cassette,
                   needed: dict[str, tuple[Callable, Callable]], entry: Callable) -> None:
    """The failing verdict in doubt judged again (scoring/recheck.py), when the row has one; not recorded yet is no
    stale replay, and in a live run one to record."""
    doubt = recheck.in_doubt(row, inputs.project.recheck_within, inputs.unreliable)
    if doubt is None:
        return
    (name, (deps_of, _)), = recheck_entry(case, needed, doubt["stage"]).items()
    again = entry(name, deps_of) if cassette.live else recorded(cassette.lookup(name, deps_of)[0])
    row["judge_recheck"] = recheck.outcome(doubt, again)
    if again:
        also_spent(row, {"judged": {name: cast(VerdictDict, again)}})


def rechecks(inputs: Inputs, case: CaseDict, row: RowDict,
             needed: dict[str, tuple[Callable, Callable]]) -> dict[str, tuple[Callable, Callable]]:
    """The entry of the row's failing verdict in doubt judged again; none when no verdict is in doubt."""
    doubt = recheck.in_doubt(row, inputs.project.recheck_within, inputs.unreliable)
    return recheck_entry(case, needed, doubt["stage"]) if doubt else {}


def trace_source(trace: TraceDict, retrievers: list[str]) -> Optional[dict]:
    """Where an imported trace came from (its `source`: format, file, trace_id, span_id), with the span ids of its
    retriever outputs in call order (`retriever_spans`) where they carry one; None for a trace the harness ran."""
    source = trace.get("source")
    if not isinstance(source, dict):
        return None
    spans = [o["span_id"] for o in trace["tool_outputs"] if o.get("tool") in retrievers and o.get("span_id")]
    return {**source, **({"retriever_spans": spans} if spans else {})}


def attach_answer_check(row: RowDict, inputs: Inputs, case: CaseDict, cassette: Cassette, context: list[str],
                        entry: Callable, *, variant: str = "") -> None:
    """The row's answer check, when it fails at an answer stage; not recorded yet is no stale replay (a threshold
    moved at replay can call for one), and in a live run one to record. Its judge calls are the run's spending."""
    if not checked_answer(row):
        return
    checks = answer_checks(inputs, case, row, context, variant)
    found = {name: entry(name, deps_of) if cassette.live else recorded(cassette.lookup(name, deps_of)[0])
             for name, (deps_of, _) in checks.items()}
    row["answer_check"] = answer_check(answer_lacks(row), found)
    paid = {name: cast(VerdictDict, value) for name, value in found.items() if value}
    if paid:
        also_spent(row, {"judged": paid})


def also_spent(row: RowDict, run: RowDict) -> None:
    """Add what an intervention's run (or an answer check's verdicts, as {"judged": ...}) spent to the row's."""
    found = [spent(run), *([run["also_spent"]] if run.get("also_spent") else [])]
    row["also_spent"] = added(*([row["also_spent"]] if row.get("also_spent") else []), *found)


def expected_calls(inputs: Inputs, case: CaseDict, row: RowDict) -> tuple[Optional[list[CallDict]], str]:
    """The calls the tools intervention makes for a case failing at tools (scoring/diagnosis.calls_to_make);
    none for an imported trace, whose agent cannot run."""
    if inputs.imported:
        return None, NO_AGENT.format("calls")
    return calls_to_make(case, row["tool_calls"], inputs.parameters, inputs.project.retrievers())


def recorded(value: Any) -> Optional[dict]:
    return None if value is ABSENT else value


def checked_answer(row: RowDict) -> bool:
    """Whether a row gets the answer check: a case that expects an answer, failing at an answer stage, whose
    answer lacks something it can name."""
    return answer_stage(row["first_failure"]) and row["expected_behavior"] == "answer" and bool(answer_lacks(row))


def answer_checks(inputs: Inputs, case: CaseDict, row: RowDict, context: list[str],
                  variant: str = "") -> dict[str, tuple[Callable, Callable]]:
    """The answer check's entries a row needs (none where there is no text to look in)."""
    return answer_check_entries(inputs, case, answer_lacks(row), context, variant) if checked_answer(row) else {}


def intervention_checks(inputs: Inputs, case: CaseDict, cassette: Cassette,
                        row: RowDict) -> dict[str, tuple[Callable, Callable]]:
    """The answer checks the row's interventions' runs still need: each run recorded that fails at an answer
    stage, and not yet checked."""
    runs: list[tuple[str, Optional[list[dict]], Optional[list[CallDict]]]] = []
    if row["first_failure"] == "retrieval" and inputs.counterfactual:
        runs.append((EXPECTED_PAGES, inputs.expected_pages(case), None))
    tried = row.get("tools_intervention")
    made = tried.get("calls") if tried else None
    if row["first_failure"] == "tools" and made:
        runs.append((EXPECTED_CALLS, None, made))
    needed: dict[str, tuple[Callable, Callable]] = {}
    for variant, pages, calls in runs:
        trace = cassette.lookup(agent_entry(case, variant), inputs.agent_deps(case, pages, calls))[0]
        if trace is ABSENT:
            continue
        again = case_row(inputs, case, cassette, variant=variant, made=calls)
        needed.update(answer_checks(inputs, case, again, inputs.view(trace)["context"], variant))
    return {name: need for name, need in needed.items() if cassette.lookup(name, need[0])[0] is ABSENT}


def answer_check(lacks: list[str], found: dict[str, Optional[dict]]) -> Optional[dict]:
    """What the answer lacks and, for each, whether the context it read and the expected pages state it; None
    until every check is recorded."""
    if any(v is None for v in found.values()):
        return None
    covered = {name.rsplit("-", 1)[1]: [f["covered"] for f in v["facts"]] for name, v in found.items() if v}
    return {"lacks": lacks, "in_context": covered.get("context", [False] * len(lacks)),
            "in_pages": covered.get("pages")}


def counterfactual(again: RowDict) -> Optional[InterventionDict]:
    """Would the right pages have fixed it? `again` is the same agent on the same question, its search
    returning the case's expected pages, scored the same way, and its answer; None until that run is recorded."""
    return None if again["answer"] is None else intervention(again, {"for": "retrieval"})


def intervention(again: RowDict, run: InterventionDict) -> InterventionDict:
    """An intervention's recorded run as its row holds it: `run` (what it was) and how it then fared."""
    run.update({"first_failure": again["first_failure"], "fixed": again["first_failure"] is None,
                "answer": again["answer"]})
    if "answer_check" in again:
        run["answer_check"] = again["answer_check"]
    return run

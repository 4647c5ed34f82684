"""What to fix for a failing case: the cause its interventions prove (a component), the evidence (which
intervention, its outcome, its answer), and the first step of the trajectory that departed from the case; and
a run's fix list, each component with the cases its intervention recovered. Pure, no I/O.

The interventions, each recorded like any entry: tools, the agent with the case's expected calls made for it,
then left to answer (row["tools_intervention"]); retrieval, the agent run again with the case's expected
pages (row["counterfactual"]); the answer stages, what the answer lacks judged against the context the agent
saw and against the expected pages (row["answer_check"]); the judge, a failing verdict in doubt judged again
(row["judge_recheck"], scoring/recheck.py); repeats, a failure that does not reproduce
(row["repeats"]). A failure no intervention explains is "undetermined", saying why.
"""
from typing import Optional

from whichstage.model.stages import BY_NAME
from whichstage.scoring.gating import passes, stage_results, threshold_of
from whichstage.scoring.recheck import judge_cause
from whichstage.model.dicts import CallDict, CaseDict, InterventionDict, DiagnosisDict, RowDict

# The causes a diagnosis can name, each with what to fix; the fix list breaks a tie between two in this order.
CAUSES = {"retriever": "the retriever", "tool choice": "the tool descriptions or the prompt",
          "generator or prompt": "the prompt or the model", "docs gap": "the docs",
          "judge": "the judge (judged again, or by a second judge, it passes what it failed)",
          "flaky": "the run's randomness (repeat it, or pin the model's sampling)", "undetermined": "nothing proven"}


def answer_lacks(row: RowDict) -> list[str]:
    """What the answer lacks: the expected facts it does not state, else the reference (as one fact)."""
    facts = (row.get("judged") or {}).get("facts") or {}
    missing = [f["fact"] for f in facts.get("facts") or [] if not f.get("covered")]
    return missing or ([row["reference"]] if row.get("reference") else [])


def calls_to_make(case: CaseDict, made: list[CallDict], parameters: dict[str, dict],
                  retrievers: list[str]) -> tuple[Optional[list[CallDict]], str]:
    """The expected calls the tools intervention makes for the agent, each with the case's stated arguments
    (a plain value; a matcher such as {"contains": ...} is no value) over those of the agent's own call to that
    tool, a retriever otherwise searching with the question; (None, why) when a call's arguments are unknown."""
    own = list(made)
    calls: list[CallDict] = []
    for name in case.get("expected_tools") or []:
        mine = next((c for c in own if c["name"] == name), None)
        if mine is not None:
            own.remove(mine)
        expected = (case.get("expected_args") or {}).get(name) or {}
        stated = {a: v for a, v in expected.items() if not isinstance(v, dict)}
        args = {**(mine["args"] if mine else {}), **stated}
        if not args and name in retrievers and parameters.get(name):
            args = {next(iter(parameters[name])): case["question"]}
        if parameters.get(name) and not args:
            return None, f"no arguments known for {name}: the case states none and the agent never called it"
        calls.append({"name": name, "args": args})
    return calls, ""


def answer_stage(stage: Optional[str]) -> bool:
    """A stage that judges the answer (every judged stage, and a project's criteria)."""
    return stage not in (None, "error") and (stage not in BY_NAME or BY_NAME[stage].decides == "judged")


def deviation(row: RowDict) -> Optional[dict]:
    """The first step that departs from the case: the first tool call that is not an expected one (its index,
    or the count of calls when an expected call is missing), else the first search, which lacked an expected
    page no search returned in its top k; None when the trajectory kept to the case."""
    expected, calls = list(row.get("expected_tools") or []), row.get("calls") or []
    left = list(expected)
    for i, name in enumerate(calls):
        if name in left:
            left.remove(name)
        elif name not in expected:
            return {"step": i, "call": name, "why": f"call {i + 1}, {name}, is not an expected call"}
    if left:
        return {"step": len(calls), "call": None, "why": f"expected {left[0]} after call {len(calls)}, not called"}
    retrieval, searches = row.get("retrieval"), row.get("searches") or []
    missed = (retrieval.get("missed") or []) if retrieval else []
    if retrieval and missed and searches:
        k = retrieval.get("k")
        return {"step": 0, "search": 0, "why": f"search 1 did not return {missed[0]}"
                                               + (f" in its top {k}" if k else "")}
    return None


def diagnose(row: RowDict) -> Optional[DiagnosisDict]:
    """A failing row's diagnosis: {"cause", "evidence", "deviation"} (evidence: {"intervention", "outcome",
    "answer"?}; an undetermined cause says why in its outcome); None for a passing or errored row."""
    first = row.get("first_failure")
    if first in (None, "error"):
        return None
    found = flaky(row) or judge_cause(row) or tools_cause(row, first) or retrieval_cause(row, first) or \
        answer_cause(row, first) or \
        ("undetermined", {"intervention": None, "outcome": f"no intervention isolates the {first} stage yet"})
    cause, evidence = found
    return {"cause": cause, "evidence": evidence, "deviation": deviation(row)}


def flaky(row: RowDict) -> Optional[tuple[str, dict]]:
    runs = row.get("repeats")
    if runs and 0 < runs["passes"] < runs["runs"]:
        return "flaky", {"intervention": "repeats", "outcome": f"passes {runs['passes']} of {runs['runs']} runs"}
    return None


def tools_cause(row: RowDict, first: str) -> Optional[tuple[str, dict]]:
    """The agent with the expected calls made for it, then left to answer: tool choice (the tool descriptions
    or the prompt), when the case then passes."""
    if first != "tools" or "tools_intervention" not in row:
        return None
    made = row["tools_intervention"]
    if made is None:
        return "undetermined", {"intervention": "expected calls", "outcome": "its run with the expected calls is not "
                                                                             "recorded: run --live to record it"}
    if made.get("available") is False:
        return "undetermined", {"intervention": None, "outcome": made["why"]}
    evidence = {"intervention": "expected calls", "answer": made.get("answer")}
    if made["first_failure"] is None:
        return "tool choice", {**evidence, "outcome": "with the expected calls made for it, the case then passes"}
    if made["first_failure"] == "error":
        return "undetermined", {**evidence, "outcome": "the run with the expected calls did not complete"}
    then = f"with the expected calls made for it, the case then fails at {made['first_failure']}"
    return then_lacks(made, then, evidence) or ("undetermined", {**evidence, "outcome": then})


def retrieval_cause(row: RowDict, first: str) -> Optional[tuple[str, dict]]:
    """The run with the expected pages: the retriever, when the case then passes."""
    if first != "retrieval":
        return None
    cf = row.get("counterfactual") or {}
    if cf.get("available") is False:
        return "undetermined", {"intervention": None, "outcome": cf.get("why") or "no run with the expected pages"}
    if "first_failure" not in cf:
        return "undetermined", {"intervention": "expected pages", "outcome": "its run with the expected pages is "
                                                                             "not recorded"}
    evidence = {"intervention": "expected pages", "answer": cf.get("answer")}
    then = cf["first_failure"]
    if then is None:
        return "retriever", {**evidence, "outcome": "retrieval passes and the case then passes"}
    if then == "error":
        return "undetermined", {**evidence, "outcome": "the run with the expected pages did not complete"}
    own = " as it does with its own pages" if stage_results(row).get(then) is False else ""
    if BY_NAME.get(then) and BY_NAME[then].name in ("behaviour", "tools"):
        return "undetermined", {**evidence, "outcome": f"with the expected pages the case fails earlier, at {then}"}
    later = f"retrieval passes and the case then fails at {then}{own}"
    return then_lacks(cf, later, evidence) or ("undetermined", {**evidence, "outcome": later})


def then_lacks(run: InterventionDict, then: str, evidence: dict) -> Optional[tuple[str, dict]]:
    """An intervention's run that then fails at an answer stage, diagnosed by its own answer check."""
    if not answer_stage(run.get("first_failure")) or "answer_check" not in run:
        return None
    if run["answer_check"] is None:
        return "undetermined", {**evidence, "outcome": f"{then}; its answer check is not recorded: run --live"}
    cause, outcome = lacks_cause(run["answer_check"])
    return cause, {**evidence, "outcome": f"{then}: {outcome}"}


def answer_cause(row: RowDict, first: str) -> Optional[tuple[str, dict]]:
    """What the answer lacks, judged in the context the agent saw and in the expected pages: in the context,
    the generator or prompt; only in the pages, the retriever; in neither, a docs gap naming the facts."""
    if not answer_stage(first) or "answer_check" not in row:
        return None
    check = row["answer_check"]
    if check is None:
        return "undetermined", {"intervention": "answer check", "outcome": "its answer check is not recorded: "
                                                                           "run --live to record it"}
    cause, outcome = lacks_cause(check)
    return cause, {"intervention": "answer check", "lacks": check["lacks"], "outcome": outcome}


def lacks_cause(check: dict) -> tuple[str, str]:
    """An answer check's verdict, as (cause, outcome)."""
    lacks, in_context, in_pages = check["lacks"], check["in_context"], check.get("in_pages")
    absent = [fact for fact, there in zip(lacks, in_context, strict=True) if not there]
    if not absent:
        return "generator or prompt", "what the answer lacks is in the context it read"
    if in_pages is None:
        return "undetermined", f"not in the context it read: {absent[0]!r}; the case names no expected pages to look in"
    nowhere = [fact for fact, there in zip(lacks, in_pages, strict=True) if not there and fact in absent]
    if nowhere:
        return "docs gap", f"in no expected page: {nowhere[0]!r}" + (f" and {len(nowhere) - 1} more"
                                                                     if len(nowhere) > 1 else "")
    return "retriever", f"not in the context it read, but in the expected pages: {absent[0]!r}"


def second_opinion(row: RowDict, twin: Optional[RowDict], judge: str) -> Optional[DiagnosisDict]:
    """A failing judged verdict the second judge (`twin`, its row of the same trace) passes: the judge is
    uncertain, not the agent proven at fault; None where the second judge agrees or did not judge it."""
    first, diagnosis = row.get("first_failure"), row.get("diagnosis")
    verdict = ((twin or {}).get("judged") or {}).get(first or "")
    if not diagnosis or not answer_stage(first) or verdict is None:
        return None
    if not passes(verdict.get("score"), threshold_of(row, first or "")):
        return None
    return {"cause": "judge", "deviation": diagnosis.get("deviation"),
            "evidence": {"intervention": "second judge", "outcome": f"the second judge, {judge}, passes {first} "
                                                                    f"({verdict['score']:.2f}): judge uncertain"}}


def fix_list(rows: list[RowDict]) -> list[dict]:
    """What to fix first: each cause with its cases, the components ordered by cases, then the undetermined."""
    by_cause: dict[str, list[str]] = {}
    for row in rows:
        found = row.get("diagnosis")
        if found:
            by_cause.setdefault(found["cause"], []).append(row["id"])
    order = list(CAUSES)
    ordered = sorted((c for c in by_cause if c != "undetermined"), key=lambda c: (-len(by_cause[c]), order.index(c)))
    if "undetermined" in by_cause:
        ordered.append("undetermined")
    return [{"cause": c, "fix": CAUSES[c], "cases": by_cause[c]} for c in ordered]

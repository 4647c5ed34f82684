"""A project's own checks in code (`checks = ["module:function"]` in evals.toml), part of the behaviour stage.

A check is a function in the project folder, imported as the agent factory is (whichstage/agent/factory.py). It names,
as parameters, what it wants of PROVIDED (as the factory does) and gets a copy of each, so it cannot change
what the other stages read. It runs when a row is scored, on the recorded trace, with no model: a replay
runs it again, so an edit to a check re-scores every case and never makes a recording stale.

A check passes by returning True, None or an empty string; it fails by returning False or a reason (a
non-empty string, which the reports show). Anything else it returns, and any exception it raises, fails it
with a reason naming what happened: a broken check is a failure the reports name, not a crash of the run.
"""
import copy
from dataclasses import dataclass
from typing import Any, Callable, Optional

from whichstage._util.console import first_line
from whichstage.model.dicts import CaseDict, RowDict, TraceDict

# What a check may name: the case as cases.json gives it (defaults filled in), the recorded trace (answer,
# tool_calls, tool_outputs, usage), its answer and question, its calls ({"name", "args"} each), the page ids
# its retrievers returned in order, and the context the judge reads (the text the agent saw).
PROVIDED = ("case", "trace", "answer", "question", "calls", "retrieved", "context")


@dataclass(frozen=True)
class Check:
    spec: str
    function: Callable
    wanted: list[str]


def load(project) -> list[Check]:
    """Import each check evals.toml declares; a missing module or function, or a parameter the harness does
    not provide, is an InputError naming `checks[i]`."""
    from whichstage.project.imports import import_function, wanted

    found = []
    for i, spec in enumerate(project.checks):
        key = f"checks[{i}]"
        function = import_function(project, spec, key)
        found.append(Check(spec, function, wanted(function, spec, key, PROVIDED)))
    return found


def run(checks: list[Check], case: CaseDict, trace: TraceDict, view: dict) -> Optional[list[dict]]:
    """Each check's verdict on one trace (`view`: the trace read by role, whichstage.agent.reading.read), in the order
    evals.toml lists them; None when the project declares none."""
    if not checks:
        return None
    values = {"case": case, "trace": trace, "answer": trace["answer"], "question": case["question"],
              "calls": [{"name": c["name"], "args": c["args"]} for c in trace["tool_calls"]],
              "retrieved": view["retrieved"], "context": view["context"]}
    return [verdict(check, {name: values[name] for name in check.wanted}) for check in checks]


def verdict(check: Check, values: dict[str, Any]) -> dict:
    """{"check", "pass", "reason"}: what one check said of one trace."""
    try:
        said = check.function(**copy.deepcopy(values))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - whatever the project's check raised: its failure, in one line
        return failed(check.spec, f"raised {first_line(e)}")
    if said is True or said is None or said == "":
        return {"check": check.spec, "pass": True, "reason": None}
    if said is False:
        return failed(check.spec, "returned False")
    if isinstance(said, str):
        return failed(check.spec, said)
    return failed(check.spec, f"returned {type(said).__name__} {said!r:.80}, not True, None, False or a reason")


def failed(spec: str, reason: str) -> dict:
    return {"check": spec, "pass": False, "reason": reason}


def summary(rows: list[RowDict]) -> dict:
    """Per check, how many scored cases it passed: {"checks": {spec: {"passed", "total"}}}; nothing when no
    row ran a check."""
    from whichstage._util.stats import rate

    verdicts: dict[str, list[bool]] = {}
    for row in rows:
        if row["first_failure"] == "error":
            continue
        behaviour = row.get("behaviour")
        for c in behaviour.get("checks", []) if behaviour else []:
            verdicts.setdefault(c["check"], []).append(c["pass"])
    return {"checks": {spec: rate(sum(v), len(v)) for spec, v in verdicts.items()}} if verdicts else {}

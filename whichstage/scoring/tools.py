"""The tools stage: the harness's own check of an agent's calls under a case's `tools_match` mode, each
argument read as the tool declares it, and the actions nobody asked for. Pure, no I/O."""
import re
from typing import Any, Iterable, Optional

from whichstage.model.dicts import ToolsDict
from whichstage.scoring import matching

INTEGER_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?", re.ASCII)  # what pydantic reads as an int
INT64_FLOAT_LIMIT = 2.0 ** 63  # pydantic refuses a float this large as an int ("exceeded maximum size")


def as_declared(value: Any, kind: Optional[type]) -> Any:
    """An argument as a tool declaring `kind` receives it, by pydantic's lax rules as LangChain's
    StructuredTool validates a call ("212" and 212.0 are 212; a float of 2^63 or more in size is refused),
    except that a bool is never a number. ValueError when the tool would refuse it; an undeclared parameter is
    taken as it is. Written without pydantic so a replay stays light; a test holds it to pydantic's TypeAdapter."""
    if kind is None:
        return value
    if isinstance(value, bool) and kind is not bool:
        raise ValueError(f"a bool is not {type_name(kind)}")
    if kind is str:
        if isinstance(value, str):
            return value
    elif kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer() and abs(value) < INT64_FLOAT_LIMIT:
            return int(value)
        if isinstance(value, str) and INTEGER_TEXT.fullmatch(value.strip()):
            return int(value.strip().split(".")[0].replace("_", ""))
    else:
        raise ValueError(f"no conversion for {type_name(kind)}")
    raise ValueError(f"{value!r} is not {type_name(kind)}")


def carries(args: dict, name: str, value: Any, kind: Optional[type]) -> bool:
    """Whether a call's arguments hold `name` equal to `value` once converted to `kind`; True is never 1.
    `value` may be a rule (whichstage.scoring.matching): any of several values, a normalised string, or ignored (then a
    call need not carry the argument at all)."""
    if matching.ignored(value):
        return True
    if name not in args:
        return False
    try:
        got = as_declared(args[name], kind)
    except ValueError:
        return False
    return matching.matches(value, got)


def type_name(kind: type) -> str:
    return f"{'an' if kind.__name__[0] in 'aeiou' else 'a'} {kind.__name__}"


def shown_argument(args: dict, name: str, kind: Optional[type]) -> str:
    if name not in args:
        return "(none)"
    if kind is None:  # an undeclared parameter is taken as it is (as_declared): never refused
        return repr(args[name])
    try:
        as_declared(args[name], kind)
    except ValueError:
        return f"{args[name]!r} (not {type_name(kind)})"
    return repr(args[name])


def argument_errors(calls: list[dict], expected_args: dict[str, dict],
                    parameters: dict[str, dict[str, Optional[type]]]) -> list[str]:
    """For each tool with stated arguments, one call to it must carry them all, each read as the tool's
    declared type. Extra calls to the same tool with other arguments are not held against it: searching twice
    is legitimate."""
    errors = []
    for tool, wanted in expected_args.items():
        declared = parameters.get(tool, {})
        made = [c["args"] for c in calls if c["name"] == tool]
        right = {name: [carries(args, name, value, declared.get(name)) for args in made]
                 for name, value in wanted.items()}
        if not made or any(all(right[name][i] for name in wanted) for i in range(len(made))):
            continue  # a missing call is the tool check's failure, not an argument's
        wrong = [wrong_argument(tool, name, value, made, declared.get(name))
                 for name, value in wanted.items() if not any(right[name])]
        errors += wrong or [f"{tool}: no one call carries "
                            f"{', '.join(f'{name}={matching.described(value)}' for name, value in wanted.items())}; "
                            "each call carries "
                            "only some of them"]
    return errors


def wrong_argument(tool: str, name: str, value: Any, made: list[dict], kind: Optional[type]) -> str:
    """One argument no call carried as stated: what was expected and what each call sent; for a contains rule,
    the texts the closest call lacks."""
    if matching.is_rule(value) and "contains" in value:
        lacks = min((matching.lacking(value, args.get(name)) for args in made), key=len)
        return f"{tool}.{name}: lacks {', '.join(map(repr, lacks))} (expected {matching.described(value)})"
    return (f"{tool}.{name}: expected {matching.described(value)}, got "
            f"{', '.join(shown_argument(args, name, kind) for args in made)}")


def unasked_actions(calls: list[dict], expected: list[str], actions: Iterable[str]) -> list[dict]:
    """The calls to action tools (role = "action") that the case does not list in expected_tools."""
    actions = set(actions)
    return [c for c in calls if c["name"] in actions and c["name"] not in expected]


def proposal(call: dict) -> str:
    """An action call as a reason shows it: file_bug_report(title='Sync fails')."""
    return f"{call['name']}({', '.join(f'{k}={v!r}' for k, v in call['args'].items())})"


def tool_verdict(calls: list[dict], expected: list[str], deepeval: dict, *, expected_args: Optional[dict] = None,
                 parameters: Optional[dict[str, dict[str, Optional[type]]]] = None,
                 mode: str = matching.DEFAULT, actions: Iterable[str] = ()) -> ToolsDict:
    """The harness's own check of the calls under the case's `tools_match` mode (whichstage.scoring.matching). The
    default, multiset: each expected entry needs a call of its own (expecting search_docs twice needs two
    searches; more calls to an expected tool are not held against it), and a call to a tool the case does not
    list fails. In every mode a wrong argument fails. A mode other than the default names itself in the
    reason and in `mode`. The score is the share of expected entries called, in every mode. DeepEval's
    ToolCorrectnessMetric, which counts identical calls (same tool, same arguments) once, is kept beside it.
    In every mode and category, an action (`actions`) the case does not list fails: it was proposed and
    nobody asked for it."""
    names = [c["name"] for c in calls]
    unasked = unasked_actions(calls, expected, actions)
    asked = [c["name"] for c in calls if c not in unasked]
    short = {} if mode == "subset" else matching.shortfall(names, expected)
    unexpected = [] if mode == "superset" else matching.unlisted(names, expected)
    wrong_args = argument_errors(calls, expected_args or {}, parameters or {})
    problems = [f"an action nobody asked for was proposed: {proposal(c)}" for c in unasked] + \
        matching.tool_problems(mode, asked, expected) + [f"wrong argument {e}" for e in wrong_args]
    verdict: ToolsDict = {
        "score": matching.called_share(names, expected),
        "reason": "; ".join(problems) or matching.agreed(mode, names, expected),
        "deepeval": {"score": deepeval["score"], "reason": deepeval["reason"]},
        "unexpected": unexpected, "missing": [tool for tool, n in short.items() for _ in range(n)],
        "wrong_args": wrong_args, "pass": not problems}
    if mode != matching.DEFAULT:
        verdict["mode"] = mode
    if unasked:
        verdict["unasked_actions"] = [c["name"] for c in unasked]
    return verdict


def deepeval_disagrees(tools: Optional[ToolsDict]) -> bool:
    """DeepEval's tool score differs from the harness's count (it matches a repeated expected tool once)."""
    return bool(tools and "deepeval" in tools and tools["deepeval"]["score"] != tools["score"])


"""Match modes for a case's tools and rules for its arguments: pure functions, no I/O and no imports of the
harness, so stages.py and dataset.py share them.

A mode reads the sequence of the calls' tool names against the case's `expected_tools` and returns its
problems, each one line naming what differed (an empty list: the calls match). `tools_match` picks it:

- `multiset` (the default): each expected entry needs a call of its own, more calls to an expected tool are
  not held against it, and a call to a tool the case does not list fails;
- `ordered`: as multiset, and the expected calls are made in the listed order, other calls to listed tools
  allowed between;
- `exact`: the calls are exactly the expected list, in its order, no more and no fewer;
- `subset`: every call is to a listed tool, at least one call is made, and not every listed tool need be
  called (nor any number of times);
- `superset`: every expected entry needs a call of its own, and calls to other tools are allowed.

An argument rule is what a case states for one argument in `expected_args`: a plain value (the call must
carry it, read as the tool's declared type), or an object: `{"any_of": [v, ...]}` (any of these values),
`{"equals": v}` (the value, also to state an object literally), either with `"normalize": ["case", "space"]`
for strings (compared casefolded, `str.casefold`, so "Straße" is "STRASSE", and/or without surrounding
whitespace, on both sides), `{"contains": ["s", ...]}` (a string argument holding each listed substring,
ignoring case: what a ticket or a message must mention), or `{"ignore": true}` (the argument is not checked:
a call need not carry it).
"""
from collections import Counter
from typing import Any, Callable, Optional

DEFAULT = "multiset"
MODES = ("multiset", "ordered", "exact", "subset", "superset")


def sequence(names: list[str]) -> str:
    return " then ".join(names) or "no tool"


def shortfall(names: list[str], expected: list[str]) -> dict[str, int]:
    """Expected tools called fewer times than listed: tool -> how many calls it lacks."""
    if names == expected:  # the usual case, at once
        return {}
    made = Counter(names)
    return {tool: n - made[tool] for tool, n in Counter(expected).items() if made[tool] < n}


def unlisted(names: list[str], expected: list[str]) -> list[str]:
    """The calls, in order, to tools the case does not list."""
    return [name for name in names if name not in expected]


def short_problems(names: list[str], expected: list[str]) -> list[str]:
    made, wanted = Counter(names), Counter(expected)
    return [f"missing {tool}" if wanted[tool] == 1 else f"expected {wanted[tool]} calls to {tool}, got {made[tool]}"
            for tool in shortfall(names, expected)]


def unlisted_problems(names: list[str], expected: list[str]) -> list[str]:
    extra = unlisted(names, expected)
    return [f"unexpected {', '.join(extra)}"] if extra else []


def multiset(names: list[str], expected: list[str]) -> list[str]:
    """Each expected entry needs a call of its own; a call to an unlisted tool fails. Order is not read."""
    return short_problems(names, expected) + unlisted_problems(names, expected)


def ordered(names: list[str], expected: list[str]) -> list[str]:
    """As multiset, and the expected calls appear in the calls in the listed order (a subsequence): other
    calls to listed tools may come between them."""
    problems = multiset(names, expected)
    if shortfall(names, expected):
        return problems  # a call that was never made has no order
    at = 0
    for j, tool in enumerate(expected):
        found = next((i for i in range(at, len(names)) if names[i] == tool), None)
        if found is None:
            before = expected[j - 1]
            times = expected[:j].count(before)
            earlier = before if times == 1 else f"{times} calls to {before}"
            return problems + [f"expected {earlier} before {tool} (called {sequence(names)})"]
        at = found + 1
    return problems


def exact(names: list[str], expected: list[str]) -> list[str]:
    """The calls are exactly the expected list: the same tools, in the same order, as many times."""
    if names == expected:
        return []
    pairs = enumerate(zip(names, expected, strict=False))
    i = next((i for i, (a, b) in pairs if a != b), min(len(names), len(expected)))
    if i < len(names) and i < len(expected):
        first = f"call {i + 1} is {names[i]}, expected {expected[i]}"
    elif i < len(expected):
        first = f"no call {i + 1}, expected {expected[i]}"
    else:
        first = f"call {i + 1} is {names[i]}, expected no more calls"
    return [f"{first} (expected {sequence(expected)}, called {sequence(names)})"]


def subset(names: list[str], expected: list[str]) -> list[str]:
    """Every call is to a listed tool, and at least one is made; not every listed tool need be called."""
    if not names:
        return [f"called no tool, expected at least one of {', '.join(dict.fromkeys(expected))}"]
    return unlisted_problems(names, expected)


def superset(names: list[str], expected: list[str]) -> list[str]:
    """Each expected entry needs a call of its own; calls to other tools are allowed."""
    return short_problems(names, expected)


CHECKS: dict[str, Callable[[list[str], list[str]], list[str]]] = {
    "multiset": multiset, "ordered": ordered, "exact": exact, "subset": subset, "superset": superset}


def called_share(names: list[str], expected: list[str]) -> float:
    """The share of expected entries called (each needs a call of its own), in every mode; with none expected,
    1.0 for no call and 0.0 for any."""
    if not expected:
        return float(not names)
    if names == expected:
        return 1.0
    made = Counter(names)
    return sum(min(n, made[tool]) for tool, n in Counter(expected).items()) / len(expected)


def tool_problems(mode: str, names: list[str], expected: list[str]) -> list[str]:
    """The problems of `mode`, each prefixed with the mode's name unless it is the default."""
    if names == expected:  # the calls are the expected list: every mode is met
        return []
    problems = CHECKS[mode](names, expected)
    return problems if mode == DEFAULT else [f"{mode}: {p}" for p in problems]


def agreed(mode: str, names: list[str], expected: list[str]) -> str:
    """The reason of calls that match under `mode`."""
    wanted = Counter(expected)
    listed = ", ".join(tool if n == 1 else f"{n} calls to {tool}" for tool, n in wanted.items())
    if not expected:
        return "no tool expected, none called"
    if mode == "multiset":
        return f"every expected call made: {listed}"
    if mode == "ordered":
        return f"ordered: every expected call made in order: {sequence(expected)}"
    if mode == "exact":
        return f"exact: called exactly {sequence(expected)}"
    if mode == "subset":
        return f"subset: every call to an expected tool: called {sequence(names)}"
    others = unlisted(names, expected)
    return f"superset: every expected call made: {listed}" + (f" (also called {', '.join(others)})" if others else "")


# ---- argument rules --------------------------------------------------------------------------------------

RULE_KEYS = ("any_of", "equals", "contains", "ignore", "normalize")
NORMALISATIONS = {"case": "case", "space": "surrounding space"}
RULE_SHAPES = ('{"any_of": [...]}, {"equals": ...}, either with "normalize": ["case", "space"], '
               '{"contains": ["...", ...]} or {"ignore": true}')


def is_rule(value: Any) -> bool:
    """A stated argument that is an object is a rule; any other value is the value itself."""
    return isinstance(value, dict)


def rule_error(value: dict) -> Optional[tuple[str, str]]:
    """What makes a rule unusable, as (the key at fault, or '' for the rule itself, the message); None when it
    is well formed. The values' types are the caller's to check (they depend on the tool)."""
    unknown = [k for k in value if k not in RULE_KEYS]
    if unknown:
        return "", f"unknown rule {unknown[0]!r} (a rule is {RULE_SHAPES})"
    if "ignore" in value:
        if value["ignore"] is not True:
            return "ignore", f"must be true, not {value['ignore']!r} (to check the argument, state its value)"
        if len(value) > 1:
            return "", f"ignore takes no other key (it has {', '.join(k for k in value if k != 'ignore')})"
        return None
    if "contains" in value:
        return contains_error(value)
    given = [k for k in ("any_of", "equals") if k in value]
    if len(given) != 1:
        return "", ("a rule needs any_of or equals" if not given else "any_of and equals cannot both be given") + \
            f" (a rule is {RULE_SHAPES})"
    if "any_of" in value and not (isinstance(value["any_of"], list) and value["any_of"]):
        return "any_of", f"must be a non-empty list of acceptable values, not {value['any_of']!r}"
    if "normalize" in value:
        steps = value["normalize"]
        if not (isinstance(steps, list) and steps):
            return "normalize", f"must be a non-empty list of {', '.join(map(repr, NORMALISATIONS))}, not {steps!r}"
        bad = [s for s in steps if not isinstance(s, str) or s not in NORMALISATIONS]
        if bad:
            return "normalize", f"unknown normalisation {bad[0]!r} (use {', '.join(map(repr, NORMALISATIONS))})"
        if len(set(steps)) < len(steps):
            return "normalize", "lists a normalisation twice"
    return None


def contains_error(value: dict) -> Optional[tuple[str, str]]:
    """What makes a contains rule unusable: another key beside it, or not a non-empty list of non-empty strings."""
    if len(value) > 1:
        return "", f"contains takes no other key (it has {', '.join(k for k in value if k != 'contains')})"
    wanted = value["contains"]
    if not (isinstance(wanted, list) and wanted and all(isinstance(w, str) and w.strip() for w in wanted)):
        return "contains", f"must be a non-empty list of the texts the argument must hold, not {wanted!r}"
    return None


def lacking(value: dict, got: Any) -> list[str]:
    """The texts of a contains rule that the argument does not hold, ignoring case (all of them when it is not
    a string)."""
    if not isinstance(got, str):
        return list(value["contains"])
    return [w for w in value["contains"] if w.casefold() not in got.casefold()]


def accepted(value: Any) -> list[Any]:
    """The values a stated argument accepts (a well-formed rule, or a plain value); [] for ignore and contains."""
    if not is_rule(value):
        return [value]
    if value.get("ignore") is True or "contains" in value:
        return []
    return list(value["any_of"]) if "any_of" in value else [value["equals"]]


def ignored(value: Any) -> bool:
    return is_rule(value) and value.get("ignore") is True


def normalised(text: str, steps: list[str]) -> str:
    if "space" in steps:
        text = text.strip()
    if "case" in steps:
        text = text.casefold()
    return text


def same(got: Any, want: Any, steps: list[str]) -> bool:
    """Equal, strings compared after `steps`; otherwise `equal`."""
    if steps:
        return isinstance(got, str) and isinstance(want, str) and normalised(got, steps) == normalised(want, steps)
    return equal(got, want)


def equal(got: Any, want: Any) -> bool:
    """Python's ==, except that a bool never equals a number at any depth (True == 1 and [True] == [1] in
    Python)."""
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(equal(got[key], want[key]) for key in got)
    if isinstance(got, (list, tuple)) and type(got) is type(want):
        return len(got) == len(want) and all(map(equal, got, want))
    return got == want and isinstance(got, bool) == isinstance(want, bool)


def matches(value: Any, got: Any) -> bool:
    """Whether an argument's value, as the tool receives it, satisfies the stated value or rule."""
    if ignored(value):
        return True
    if is_rule(value) and "contains" in value:
        return not lacking(value, got)
    steps = value.get("normalize", []) if is_rule(value) else []
    return any(same(got, want, steps) for want in accepted(value))


def described(value: Any) -> str:
    """A stated value or rule as a reason names it: 212, one of 212, 213, 'BRW-117' (ignoring case)."""
    if not is_rule(value):
        return repr(value)
    if ignored(value):
        return "anything"
    if "contains" in value:
        return f"text containing {', '.join(map(repr, value['contains']))} (ignoring case)"
    values = accepted(value)
    text = repr(values[0]) if "equals" in value else f"one of {', '.join(map(repr, values))}"
    steps = value.get("normalize", [])
    return text + (f" (ignoring {' and '.join(NORMALISATIONS[s] for s in steps)})" if steps else "")

"""Checking input files: a malformed case, page or calibration case fails loudly on load.

`load_cases` checks the case set against the models in whichstage/model/inputs.py, the pages and the agent's tools;
`load_calibration` the labelled judge cases. Any problem raises InputError with one line that names the
file, the case id where there is one, and the field.
Content that already passed those models (a stamp in `.cache/validated.json` in the project) is not given to
pydantic again, so a replay does not import it; the checks across files always run.
"""
import hashlib
import json
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Optional, cast

from whichstage.scoring import matching
from whichstage._util.files import read_json, write_atomic
from whichstage.model.errors import InputError, where  # noqa: F401  (InputError: imported from here too)
from whichstage.model.dicts import CalibrationSetDict, CaseSetDict

ID_RULE = "ids may hold only ASCII letters, digits, '-', '_' and '.'"
# The reference `assistant.py --as-case` drafts: a case still holding it is refused, since a person decides
# what right looks like.
REFERENCE_PLACEHOLDER = "TODO: write the right answer; a case with this reference is refused"
PAGE_ID_RULE = "a page id may not hold '|', '`' or a line break, nor start or end with a space"
CACHE = Path(".cache") / "validated.json"  # beside the input files; gitignored


def read(path: Path, label: Optional[str] = None) -> Any:
    return read_json(path, InputError, label or Path(path).name)


def check(path: Path, model: str, data: Any, label: Optional[str] = None) -> None:
    """Validate `data` against model.inputs.`model`; its first error becomes one line naming file, case and
    field."""
    from pydantic import ValidationError

    from whichstage.model import inputs

    try:
        getattr(inputs, model).model_validate(data)
    except ValidationError as e:
        error = e.errors()[0]
        # Literal and dict-key locations carry pydantic's own tags; keep only real field names and indexes.
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and p.startswith(("literal[", "[key]"))))
        rule = PAGE_ID_RULE if loc[:1] == ("pages",) else ID_RULE
        message = rule if error["type"] == "string_pattern_mismatch" and loc[-1:] in (("id",), ("category",)) \
            else error["msg"]
        raise InputError(f"{label or path.name}: {where(data, loc)}: {message}") from None


@cache
def schema_version() -> str:
    """What a verdict depends on besides the content: this file, model/inputs.py and pydantic's version. Any
    change to them invalidates every stamp."""
    digest = hashlib.sha256()
    for source in (Path(__file__), Path(__file__).parents[1] / "model" / "inputs.py"):
        digest.update(source.read_bytes())
    spec = find_spec("pydantic")
    if spec is not None and spec.submodule_search_locations:
        digest.update((Path(spec.submodule_search_locations[0]) / "version.py").read_bytes())
    return digest.hexdigest()


class Validated:
    """Stamps of content that passed the models, by file name: the SHA-256 of (schema_version, model, the
    parsed content). New stamps are written by `save`, once the whole load has passed every check."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / CACHE
        self.new: dict[str, str] = {}
        try:
            stamps = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # no cache yet, or a damaged one: validate everything
            stamps = {}
        self.stamps = stamps if isinstance(stamps, dict) else {}

    def check(self, path: Path, model: str, data: Any, label: Optional[str] = None) -> None:
        """`check`, unless this very content already passed this very model."""
        try:
            stamp = hashlib.sha256(json.dumps([schema_version(), model, data], sort_keys=True).encode()).hexdigest()
        except RecursionError:  # nested near the reader's limit: validated every time, never stamped
            stamp = None
        name = label or path.name
        if stamp is None or self.stamps.get(name) != stamp:
            check(path, model, data, label)
            if stamp is not None:
                self.new[name] = stamp

    def save(self) -> None:
        """Keep the new stamps; a cache that cannot be written costs the next run a validation, nothing more."""
        if self.new:
            try:
                write_atomic(self.path, json.dumps({**self.stamps, **self.new}, indent=1, sort_keys=True) + "\n")
            except OSError:
                pass


def unique_ids(label: str, items: list[dict], field: str) -> None:
    seen = set()
    for i, item in enumerate(items):
        if item["id"] in seen:
            raise InputError(f"{label}: {field}[{i}] ({item['id']}).id: duplicate id")
        seen.add(item["id"])


def check_stated(field: str, tool: str, name: str, kind: Optional[type], value: Any) -> None:
    """A stated argument: a value of the tool's declared type, or a rule (whichstage.scoring.matching) that can apply to
    it: known keys, a non-empty any_of of values of that type, ignore only as true, normalize only on strings."""
    def of_kind(at: str, v: Any) -> None:
        if kind is not None and (not isinstance(v, kind) or isinstance(v, bool) and kind is not bool):
            raise InputError(f"{at}: {tool} takes {name} as {kind.__name__}; {v!r} is not one")

    if not matching.is_rule(value):
        return of_kind(field, value)
    problem = matching.rule_error(value)
    if problem:
        key, message = problem
        raise InputError(f"{field}{'.' + key if key else ''}: {message}")
    if "contains" in value and kind is not None and kind is not str:
        raise InputError(f"{field}.contains: {tool} takes {name} as {kind.__name__}; contains applies to strings only")
    normalised = "normalize" in value
    if normalised and kind is not None and kind is not str:
        raise InputError(f"{field}.normalize: {tool} takes {name} as {kind.__name__}; normalize applies to "
                         "strings only")
    values = [("any_of", i, v) for i, v in enumerate(value["any_of"])] if "any_of" in value else \
        [("equals", None, value["equals"])] if "equals" in value else []
    for key, i, v in values:
        at = f"{field}.{key}" + ("" if i is None else f"[{i}]")
        of_kind(at, v)
        if normalised and not isinstance(v, str):
            raise InputError(f"{at}: normalize compares strings; {v!r} is not one")


DEFAULTS = {"category": "uncategorised", "expected_behavior": "answer", "split": "dev", "expected_docs": [],
            "expected_tools": [], "expected_args": {}, "must_not": []}


def load_cases(path: Path, label: str, page_ids: set[str], tools: dict[str, dict[str, Optional[type]]],
               retrievers: list[str], validated: Validated) -> CaseSetDict:
    """The case set, checked against the schema, the pages and the agent's tools (name -> argument types);
    the optional fields are filled with their defaults."""
    return checked_cases(read(path, label), path, label, page_ids, tools, retrievers, validated)


def checked_cases(cases: Any, path: Path, label: str, page_ids: set[str], tools: dict[str, dict[str, Optional[type]]],
                  retrievers: list[str], validated: Validated) -> CaseSetDict:
    """load_cases of a case set already read (`cases`, as the file at `path` would hold it)."""
    validated.check(path, "CaseSet", cases, label)
    cases = {**cases, "cases": [{**DEFAULTS, **case} for case in cases["cases"]]}
    unique_ids(label, cases["cases"], "cases")
    for i, case in enumerate(cases["cases"]):
        at = f"{label}: cases[{i}] ({case['id']})"
        unknown = [t for t in case["expected_tools"] if t not in tools]
        if unknown:
            raise InputError(f"{at}.expected_tools: the agent has no tool {unknown[0]!r} (its tools: "
                             f"{', '.join(tools) or 'none'})")
        history = case.get("history") or []
        if history and history[-1]["role"] != "assistant":
            raise InputError(f"{at}.history: the last turn must be the assistant's: the question is the user's "
                             "next turn")
        for t, turn in enumerate(history):
            if turn["role"] == "user" and turn.get("tool_calls"):
                raise InputError(f"{at}.history[{t}].tool_calls: only an assistant turn calls tools")
            for c, call in enumerate(turn.get("tool_calls", [])):
                if call["name"] not in tools:
                    raise InputError(f"{at}.history[{t}].tool_calls[{c}].name: the agent has no tool "
                                     f"{call['name']!r} (its tools: {', '.join(tools) or 'none'})")
        if case["reference"].strip() == REFERENCE_PLACEHOLDER:
            raise InputError(f"{at}.reference: still the placeholder `assistant.py --as-case` drafted: write the "
                             "right answer")
        stray = [t for t in case["expected_args"] if t not in case["expected_tools"]]
        if stray:
            raise InputError(f"{at}.expected_args: {stray[0]} is not in expected_tools")
        mode = case.get("tools_match", matching.DEFAULT)
        if mode != matching.DEFAULT and not case["expected_tools"]:
            raise InputError(f"{at}.tools_match: {mode!r} matches the calls against expected_tools, and the case "
                             "expects none (a case that expects no call is checked as such)")
        for tool, args in case["expected_args"].items():
            for name, value in args.items():
                field = f"{at}.expected_args.{tool}.{name}"
                if name not in tools[tool]:
                    raise InputError(f"{field}: {tool} has no parameter {name!r} (it takes "
                                     f"{', '.join(tools[tool]) or 'none'})")
                check_stated(field, tool, name, tools[tool][name], value)
        behaviour = case["expected_behavior"]
        if behaviour == "abstain" and not set(retrievers) & set(case["expected_tools"]):
            need = (f"expect a retriever ({', '.join(retrievers)})" if retrievers else
                    "expect a retriever, and evals.toml declares none ([tools.NAME] role = \"retriever\")")
            raise InputError(f"{at}.expected_tools: an abstain case must {need}: the agent searches before it "
                             "says the docs do not answer")
        if behaviour == "chitchat" and case["expected_tools"]:
            raise InputError(f"{at}.expected_tools: a chitchat case expects no tool call")
        unknown = [p for p in case["expected_docs"] if p not in page_ids]
        if unknown:
            listed = ", ".join(sorted(page_ids)[:20]) + (", ..." if len(page_ids) > 20 else "")
            raise InputError(f"{at}.expected_docs: unknown page {unknown[0]!r} (the pages are "
                             f"{listed or 'none'})")
    return cast(CaseSetDict, cases)  # checked against the CaseSet model, its defaults filled


def load_calibration(project) -> CalibrationSetDict:
    """The project's labelled calibration cases (evals.toml's `calibration`), validated."""
    validated, label = Validated(project.folder), project.calibration
    path = project.path(label, "calibration")
    cases = read(path, label)
    validated.check(path, "CalibrationSet", cases, label)
    unique_ids(label, cases["cases"], "cases")
    from whichstage.judging.metrics import calibrated_metrics

    known = calibrated_metrics(c.name for c in project.criteria)
    for i, case in enumerate(cases["cases"]):
        if case["metric"] not in known:
            raise InputError(f"{label}: {where(cases, ('cases', i, 'metric'))}: unknown metric {case['metric']!r} "
                             f"(valid: {', '.join(known)}; a criterion is declared in evals.toml as [criteria.NAME])")
        if (case["metric"] == "facts") != bool(case.get("expected_facts")):
            need = "a facts row must list" if case["metric"] == "facts" else "only a facts row lists"
            raise InputError(f"{label}: {where(cases, ('cases', i, 'expected_facts'))}: {need} the facts the answer "
                             "must convey")
    validated.save()
    return cast(CalibrationSetDict, cases)  # checked against the CalibrationSet model

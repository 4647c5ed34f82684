"""Schemas for the input files: a malformed case, page, issue or calibration case fails loudly on load.

`load_inputs(folder)` returns the raw JSON of cases.json, docs.json and issues.json (hashed as written)
after checking them against these models and against each other; any problem raises InputError with one
line that names the file, the case id where there is one, and the field.
"""
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from assistant import TOOL_PARAMETERS, TOOLS
from cassette import read_json

NonEmpty = Field(min_length=1)
# Ids go into markdown tables, HTML and entry names, so nothing in them may break those.
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+$")]
ID_RULE = "ids may hold only ASCII letters, digits, '-', '_' and '.'"


class InputError(Exception):
    """An input file that cannot be used as it is."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


CATEGORIES = ("answerable", "multi_hop", "unanswerable", "injection", "adversarial", "smalltalk", "contradiction")
BEHAVIOURS = ("answer", "abstain", "chitchat")
SPLITS = ("dev", "holdout")


class Case(Strict):
    id: Id = NonEmpty
    question: str = NonEmpty
    category: Literal[CATEGORIES]
    # answer: from the docs; abstain: search, then say the docs do not answer; chitchat: reply, no lookup.
    expected_behavior: Literal[BEHAVIOURS]
    split: Literal[SPLITS]  # holdout cases are never reported while tuning: see README
    expected_docs: list[str]
    expected_tools: list[Literal[TOOLS]]
    # Arguments a call must carry, by tool: {"get_issue": {"number": 212}}.
    expected_args: dict[Literal[TOOLS], dict[str, Any]] = Field(default_factory=dict)
    # Strings whose mere presence in the answer proves harm (never claims: a warning may quote a claim).
    must_not: list[Annotated[str, StringConstraints(min_length=3)]] = Field(default_factory=list)
    reference: str = NonEmpty


class CaseSet(Strict):
    name: str = NonEmpty
    version: int = Field(gt=0)
    cases: list[Case] = NonEmpty


class Doc(Strict):
    id: Id = NonEmpty
    title: str = NonEmpty
    text: str = NonEmpty
    # Instructions planted in the page for an AI reader, as the eval's ground truth; the agent never sees
    # this field, only title and text, in which each planted sentence must appear.
    planted: list[str] = Field(default_factory=list)


class Issue(Strict):
    title: str = NonEmpty
    state: Literal["open", "closed"]
    fixed_in: Optional[str]


class Docs(Strict):
    """docs.json is a bare list; it is checked wrapped, so errors read 'docs[3] (config).text'."""
    docs: list[Doc] = NonEmpty


class Issues(Strict):
    issues: dict[Annotated[str, StringConstraints(pattern=r"^[0-9]+$")], Issue]


class CalibrationCase(Strict):
    id: Id = NonEmpty
    metric: Literal["faithfulness", "faithfulness_strict", "contextual_recall", "answer_relevancy", "abstained",
                    "ignored_planted"]
    label: Literal["defect", "good"]  # the human's verdict: must the judge fail this answer, or pass it?
    note: str = NonEmpty
    question: str = NonEmpty
    answer: str = NonEmpty
    reference: str = NonEmpty
    context: list[str] = NonEmpty


class CalibrationSet(Strict):
    name: str = NonEmpty
    version: int = Field(gt=0)
    cases: list[CalibrationCase] = NonEmpty


def read(path: Path) -> Any:
    return read_json(path, InputError, Path(path).name)


def where(data: Any, loc: tuple) -> str:
    """'cases[4] (pipe-colors).expected_docs' from pydantic's location, naming the case by its id."""
    text, node = "", data
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                text += f" ({node['id'] if node['id'].isprintable() else repr(node['id'])})"
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text or "top level"


def check(path: Path, model, data: Any) -> None:
    try:
        model.model_validate(data)
    except ValidationError as e:
        error = e.errors()[0]
        # Literal and dict-key locations carry pydantic's own tags; keep only real field names and indexes.
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and p.startswith(("literal[", "[key]"))))
        message = ID_RULE if error["type"] == "string_pattern_mismatch" and loc[-1:] == ("id",) else error["msg"]
        raise InputError(f"{path.name}: {where(data, loc)}: {message}") from None


def unique_ids(path: Path, items: list[dict], field: str) -> None:
    seen = set()
    for i, item in enumerate(items):
        if item["id"] in seen:
            raise InputError(f"{path.name}: {field}[{i}] ({item['id']}).id: duplicate id")
        seen.add(item["id"])


def load_cases(path: Path, page_ids: set[str]) -> dict:
    cases = read(path)
    check(path, CaseSet, cases)
    unique_ids(path, cases["cases"], "cases")
    for i, case in enumerate(cases["cases"]):
        stray = [t for t in case.get("expected_args", {}) if t not in case["expected_tools"]]
        if stray:
            raise InputError(f"{path.name}: cases[{i}] ({case['id']}).expected_args: {stray[0]} is not in "
                             "expected_tools")
        for tool, args in case.get("expected_args", {}).items():
            for name, value in args.items():
                kind = TOOL_PARAMETERS[tool].get(name)
                field = f"{path.name}: cases[{i}] ({case['id']}).expected_args.{tool}.{name}"
                if kind is None:
                    raise InputError(f"{field}: {tool} has no parameter {name!r} (it takes "
                                     f"{', '.join(TOOL_PARAMETERS[tool])})")
                if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
                    raise InputError(f"{field}: {tool} takes {name} as {kind.__name__}; {value!r} is not one")
        behaviour = case["expected_behavior"]
        if behaviour == "abstain" and "search_docs" not in case["expected_tools"]:
            raise InputError(f"{path.name}: cases[{i}] ({case['id']}).expected_tools: an abstain case must expect "
                             "search_docs (the agent searches before it says the docs do not answer)")
        if behaviour == "chitchat" and case["expected_tools"]:
            raise InputError(f"{path.name}: cases[{i}] ({case['id']}).expected_tools: a chitchat case expects "
                             "no tool call")
        unknown = [p for p in case["expected_docs"] if p not in page_ids]
        if unknown:
            raise InputError(f"{path.name}: cases[{i}] ({case['id']}).expected_docs: unknown page "
                             f"{unknown[0]!r} (docs.json has {', '.join(sorted(page_ids))})")
    return cases


def load_inputs(folder: Path) -> tuple[dict, list[dict], dict]:
    """cases.json, docs.json and issues.json from `folder`, validated."""
    folder = Path(folder)
    docs = read(folder / "docs.json")
    check(folder / "docs.json", Docs, {"docs": docs})
    unique_ids(folder / "docs.json", docs, "docs")
    for i, doc in enumerate(docs):
        stray = [p for p in doc.get("planted", []) if p not in doc["text"]]
        if stray:
            raise InputError(f"docs.json: docs[{i}] ({doc['id']}).planted: not in the page's text: {stray[0][:60]!r}")
    issues = read(folder / "issues.json")
    check(folder / "issues.json", Issues, {"issues": issues})
    cases = load_cases(folder / "cases.json", {d["id"] for d in docs})
    return cases, docs, issues


def load_calibration(path: Path) -> dict:
    cases = read(path)
    check(path, CalibrationSet, cases)
    unique_ids(path, cases["cases"], "cases")
    return cases


"""The pydantic models of the input files and of a baseline, imported only when something needs validating.

dataset.py and baseline.py turn a validation error into their one-line messages. dataset.py gives pydantic
only content that has not passed these models before (its stamps cover this file's source), so a replay of
unchanged inputs never imports it.
"""
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from typing_extensions import TypedDict  # pydantic reads typing's own only from Python 3.12

from assistant import TOOLS

NonEmpty = Field(min_length=1)
# Ids go into markdown tables, HTML and entry names, so nothing in them may break those.
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+$")]


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


# ---- a baseline file (baseline.py) ---------------------------------------------------------------------

class Rate(TypedDict):
    passed: Annotated[int, Field(ge=0)]
    total: Annotated[int, Field(ge=0)]


class Saved(BaseModel):
    """The fields of a baseline file that the check reads, with their types; other fields are ignored."""
    model_config = ConfigDict(strict=True)
    measured_with: dict[str, Any]
    tolerance: float = Field(ge=0)
    pass_rate: Rate
    stages: dict[str, Rate]
    retrieval: dict[str, float]
    first_failures: dict[str, Optional[str]] = {}
    ladder: dict[str, dict[str, float]] = {}

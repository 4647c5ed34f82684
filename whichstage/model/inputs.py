"""The pydantic models of the input files (a case set, pages, calibration cases), imported only when something
needs validating.

dataset.py turns a validation error into its one-line message. dataset.py gives pydantic
only content that has not passed these models before (its stamps cover this file's source), so a replay of
unchanged inputs never imports it.
"""
from typing import Annotated, Any, Literal, Optional, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

NonEmpty = Field(min_length=1)
# Ids go into markdown tables, HTML and entry names, so nothing in them may break those.
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+$")]
# A page id may also be a path (a markdown page's id is its path in the project): no '|', '`' or line break.
PageId = Annotated[str, StringConstraints(pattern=r"^[^|`\s](?:[^|`\r\n\t]*[^|`\s])?$")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


CATEGORIES = ("answerable", "multi_hop", "unanswerable", "injection", "adversarial", "smalltalk", "contradiction")
# Each a Literal type for the field and its values as a tuple, from the one list.
Behaviour = Literal["answer", "abstain", "chitchat"]
BEHAVIOURS = get_args(Behaviour)
Split = Literal["dev", "holdout"]
SPLITS = get_args(Split)
ToolsMatch = Literal["multiset", "ordered", "exact", "subset", "superset"]  # whichstage.scoring.matching.MODES
TOOLS_MATCH = get_args(ToolsMatch)


class HistoryCall(Strict):
    """A tool call an assistant turn of the history made, with what the tool returned then."""
    name: str = NonEmpty
    args: dict[str, Any] = Field(default_factory=dict)
    output: str = ""


class Turn(Strict):
    """An earlier turn of the conversation a follow-up question belongs to."""
    role: Literal["user", "assistant"]
    content: str = NonEmpty
    tool_calls: list[HistoryCall] = Field(default_factory=list)


class Case(Strict):
    id: Id = NonEmpty
    question: str = NonEmpty
    # Free-form, for the per-category table (the bundled example uses CATEGORIES).
    category: Id = "uncategorised"
    # answer: from the docs; abstain: search, then say the docs do not answer; chitchat: reply, no lookup.
    expected_behavior: Behaviour = "answer"
    split: Split = "dev"  # holdout cases are never reported while tuning: see docs/cases-and-inputs.md
    expected_docs: list[str] = Field(default_factory=list)
    # The agent's tool names: checked against the tools read from the agent (dataset.load_cases).
    expected_tools: list[str] = Field(default_factory=list)
    # How the calls are matched against expected_tools (whichstage.scoring.matching); absent is multiset, today's rule.
    tools_match: ToolsMatch = "multiset"
    # Arguments a call must carry, by tool: {"get_issue": {"number": 212}}; a value may be a rule, an object
    # ({"any_of": [...]}, {"equals": ..., "normalize": ["case", "space"]}, {"ignore": true}) that
    # dataset.load_cases checks against the tool's declared types.
    expected_args: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # Strings whose mere presence in the answer proves harm (never claims: a warning may quote a claim).
    must_not: list[Annotated[str, StringConstraints(min_length=3)]] = Field(default_factory=list)
    reference: str = NonEmpty
    # Short statements a good answer must convey, each judged covered or not at the facts stage (not on an
    # abstain case); none: the stage does not apply.
    expected_facts: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)
    # The earlier turns the agent receives before `question`: every stage scores the last turn.
    history: list[Turn] = Field(default_factory=list)
    # The trace a case was drafted from by `whichstage import` (docs/traces.md): its file's format, the file,
    # the trace's id and its root span's id. Read by no stage.
    source: Optional[dict[str, str]] = None


class CaseSet(Strict):
    name: str = NonEmpty
    version: int = Field(gt=0)
    cases: list[Case] = NonEmpty


class Page(BaseModel):
    """A page of a JSON pages file: any other field is the page's metadata (a url, a date...)."""
    model_config = ConfigDict(extra="allow", strict=True)
    id: PageId = NonEmpty
    title: Optional[str] = None
    text: str = NonEmpty
    # Instructions planted in the page for an AI reader, as the eval's ground truth; the agent never sees
    # this field, only the text, in which each planted sentence must appear.
    planted: list[str] = Field(default_factory=list)


class Pages(Strict):
    """A pages file is a bare list; it is checked wrapped, so errors read 'pages[3] (config).text'."""
    pages: list[Page] = NonEmpty


class CalibrationCase(Strict):
    id: Id = NonEmpty
    # A built-in metric or a criterion evals.toml declares: dataset.load_calibration checks it against both.
    metric: str = NonEmpty
    label: Literal["defect", "good"]  # the human's verdict: must the judge fail this answer, or pass it?
    note: str = NonEmpty
    question: str = NonEmpty
    answer: str = NonEmpty
    reference: str = NonEmpty
    context: list[str] = NonEmpty
    # The facts metric's rows: the facts the answer must convey (dataset.load_calibration requires them there).
    expected_facts: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)


class CalibrationSet(Strict):
    name: str = NonEmpty
    version: int = Field(gt=0)
    cases: list[CalibrationCase] = NonEmpty


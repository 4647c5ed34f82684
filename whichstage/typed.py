"""The public description of what the harness reads and returns: a case, a trace, a report row and a report.

They are TypedDicts over the plain dicts the pipeline passes (cases.json, the recording, runs/*.json), so a
user's type checker can read results without the harness converting them. A key in `total=False` classes
may be absent.
"""
from typing import Any, Optional, TypedDict


class ToolCall(TypedDict):
    """One tool call the agent made: the tool's name and its arguments."""
    name: str
    args: dict[str, Any]


class _CaseRequired(TypedDict):
    id: str
    question: str
    reference: str


class Case(_CaseRequired, total=False):
    """One case of cases.json (docs/cases-and-inputs.md): a question and what a good run of it does."""
    category: str
    expected_behavior: str  # "answer", "abstain" or "chitchat"
    split: str  # "dev" or "holdout"
    expected_docs: list[str]
    expected_tools: list[str]
    tools_match: str
    expected_args: dict[str, dict[str, Any]]
    must_not: list[str]
    expected_facts: list[str]
    history: list[dict[str, Any]]


class _TraceRequired(TypedDict):
    answer: str
    tool_calls: list[ToolCall]
    tool_outputs: list[dict[str, Any]]  # {"tool": name, "content": what it returned, as text}


class Trace(_TraceRequired, total=False):
    """One recorded agent run (a recording's `agent/<case>` entry): its answer, calls, outputs and cost."""
    usage: dict[str, Any]  # tokens in and out
    agent_s: float  # the run's wall time in seconds


class Verdict(TypedDict, total=False):
    """A judged stage's verdict: the judge's score and reason, and the threshold it is held to."""
    score: Optional[float]
    reason: str
    threshold: float


class Row(TypedDict, total=False):
    """A case's row of a report: the case, what its run did, each stage's verdict and its first failing stage
    (None when every stage passed; "error" when a call failed, with `error` saying why)."""
    id: str
    question: str
    category: str
    split: str
    expected_behavior: str
    reference: str
    expected_docs: list[str]
    expected_tools: list[str]
    answer: Optional[str]
    calls: list[str]  # the tools called, in order
    tool_calls: list[ToolCall]
    retrieved: list[str]  # page ids the retriever returned
    behaviour: Optional[dict[str, Any]]
    tools: Optional[dict[str, Any]]  # score, reason, pass, missing, unexpected, wrong_args
    retrieval: Optional[dict[str, Any]]  # hit, recall, reciprocal_rank, missed
    judged: dict[str, Verdict]  # by stage: faithfulness, answer_relevancy, facts, a criterion...
    first_failure: Optional[str]
    error: Optional[str]
    counterfactual: Optional[dict[str, Any]]  # a retrieval failure: would the expected pages have fixed it?
    usage: dict[str, Any]
    agent_s: Optional[float]


class Report(TypedDict, total=False):
    """The report of one run and split (runs/<run>.json): how it was measured (`key`: agent, hashes, models),
    its rows and their summary (pass rate, per-stage rates, first failures, cost)."""
    key: dict[str, Any]
    k: int  # the retrieval depth scored
    threshold: float
    thresholds: dict[str, float]
    split: str
    held_out: int
    rows: list[Row]
    summary: dict[str, Any]
    calibration: dict[str, Any]

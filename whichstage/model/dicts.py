"""What the pipeline passes from load to render: a case, a trace, a verdict, each stage's result, a row and a
report, as TypedDicts. At run time they are the dicts JSON reads and writes, since a replay imports no pydantic
(importing the models costs about as much CPU as a whole warm replay: docs/measurements.md); a type checker
holds every key the pipeline reads to these. The pydantic models beside them (inputs.py, trace.py, report.py)
validate the same shapes where a file is read, and tests/commands/test_shapes_agree.py holds the two to the
same fields. Two of a summary's keys name k (`hit_at_3`, `recall_at_3`), which a TypedDict cannot declare:
those are read through `at_k`."""
from typing import Any, NotRequired, Optional, TypedDict, cast

Object = dict[str, Any]


class CallDict(TypedDict):
    """One tool call the agent made (trace.ToolCall)."""
    name: str
    args: Object


class OutputDict(TypedDict):
    """What a tool returned (trace.ToolOutput); `span_id` on an imported trace's retriever output."""
    tool: NotRequired[Optional[str]]
    content: str
    artifact: NotRequired[Optional[list[Object]]]
    callbacks: NotRequired[Optional[list[Object]]]
    span_id: NotRequired[str]
    retriever_span_ids: NotRequired[list[str]]


class TraceDict(TypedDict):
    """A recorded agent run (trace.Trace), and `source` on an imported one."""
    answer: str
    tool_calls: list[CallDict]
    tool_outputs: list[OutputDict]
    usage: NotRequired[dict[str, int]]
    agent_s: NotRequired[Optional[float]]
    proposed: NotRequired[list[Object]]
    source: NotRequired[dict[str, str]]


class CaseDict(TypedDict):
    """A case as the pipeline reads it (inputs.Case): the file's, with project/validate.py's DEFAULTS filled in;
    the other optional fields stay absent where the file omits them (cases_sha hashes the case so filled)."""
    id: str
    question: str
    reference: str
    category: str
    expected_behavior: str
    split: str
    expected_docs: list[str]
    expected_tools: list[str]
    expected_args: dict[str, Object]
    must_not: list[str]
    tools_match: NotRequired[str]
    expected_facts: NotRequired[list[str]]
    history: NotRequired[list[Object]]
    source: NotRequired[Optional[dict[str, str]]]


class CaseSetDict(TypedDict):
    """A case set (inputs.CaseSet): its name, version and cases."""
    name: str
    version: int
    cases: list[CaseDict]


class CalibrationCaseDict(TypedDict):
    """A hand-labelled case of the judge's calibration set (inputs.CalibrationCase)."""
    id: str
    metric: str
    label: str
    note: str
    question: str
    answer: str
    reference: str
    context: list[str]
    expected_facts: NotRequired[list[str]]


class CalibrationSetDict(TypedDict):
    """The calibration set (inputs.CalibrationSet)."""
    name: str
    version: int
    cases: list[CalibrationCaseDict]


class CalibrationRowDict(TypedDict):
    """A calibration case judged REPEATS times: its scores, the judge's verdict and whether it agrees with the
    label (analysis/calibration.py)."""
    id: str
    metric: str
    label: str
    note: str
    scores: list[Optional[float]]
    verdict: str
    agrees: bool
    spread: Optional[float]
    reason: Optional[str]


class VerdictDict(TypedDict, total=False):
    """A judged stage's verdict (trace.Verdict); `facts` for the expected-facts metric."""
    score: Optional[float]
    reason: Optional[str]
    threshold: float
    judge_s: Optional[float]
    cost: Optional[float]
    tokens_in: Optional[int]
    tokens_out: Optional[int]
    facts: list[Object]


# "pass" is a keyword: these are declared in the functional form.
BehaviourDict = TypedDict("BehaviourDict", {
    "pass": bool, "failures": list[str], "planted_retrieved": list[str], "checks": NotRequired[list[Object]],
    "in_code": NotRequired[dict[str, str]]})
ToolsDict = TypedDict("ToolsDict", {
    "pass": bool, "score": float, "reason": NotRequired[Optional[str]], "missing": NotRequired[list[str]],
    "unexpected": NotRequired[list[str]], "wrong_args": NotRequired[list[str]], "deepeval": NotRequired[Object],
    "mode": NotRequired[str], "unasked_actions": NotRequired[list[str]]})
# An intervention's run: the retrieval counterfactual (`for`: "retrieval") or the tools intervention (`calls`).
InterventionDict = TypedDict("InterventionDict", {
    "for": str, "calls": list[CallDict], "available": bool, "why": str, "fixed": bool, "first_failure": Optional[str],
    "answer": Optional[str], "answer_check": Optional[Object]}, total=False)


class RetrievalDict(TypedDict):
    """The expected pages among the first k retrieved (report.Retrieval)."""
    recall: float
    hit: bool
    reciprocal_rank: float
    missed: list[str]
    k: NotRequired[int]


class DiagnosisDict(TypedDict):
    """A failing case's cause, what proved it and the first step that departed (report.Diagnosis)."""
    cause: str
    evidence: Object
    deviation: Optional[Object]


class RowDict(TypedDict, total=False):
    """A case's row of a report (report.Row): the case, what its run did, each stage's verdict, the
    interventions recorded for its failure, its diagnosis and what it spent. Built a field at a time
    (run/rows.py), so no field is required of it."""
    id: str
    question: str
    category: str
    split: str
    expected_behavior: str
    reference: str
    expected_docs: list[str]
    expected_tools: list[str]
    expected_args: dict[str, Object]
    must_not: list[str]
    criteria: dict[str, float]
    ladder: Optional[dict[str, Object]]
    answer: Optional[str]
    calls: list[str]
    tool_calls: list[CallDict]
    retrieved: list[str]
    searches: list[list[str]]
    searched: bool
    behaviour: Optional[BehaviourDict]
    tools: Optional[ToolsDict]
    retrieval: Optional[RetrievalDict]
    judged: dict[str, VerdictDict]
    counterfactual: Optional[InterventionDict]
    tools_intervention: Optional[InterventionDict]
    answer_check: Optional[Object]
    judge_recheck: Optional[Object]
    diagnosis: Optional[DiagnosisDict]
    source: Object
    usage: dict[str, int]
    also_spent: Object
    agent_s: Optional[float]
    error: Optional[str]
    first_failure: Optional[str]
    repeats: Object


class SummaryDict(TypedDict, total=False):
    """A run's summary (scoring/summary.py summarize, with the checks, the fix list and the ladder): counts, pass
    rates with their Wilson intervals, per-stage rates, means of the judged scores, first failures, tokens, cost
    and latency; and `hit_at_K`, `recall_at_K` (at_k)."""
    cases: int
    errors: int
    passed: int
    pass_rate: Object
    stages: dict[str, Object]
    tool_pass: int
    mrr: Optional[float]
    mean_faithfulness: Optional[float]
    mean_contextual_precision: Optional[float]
    mean_contextual_recall: Optional[float]
    mean_answer_relevancy: Optional[float]
    mean_facts: Optional[float]
    first_failures: dict[str, int]
    categories: dict[str, Object]
    counterfactual: dict[str, dict[str, int]]
    repeats: Object
    tokens: Object
    cost: Optional[float]
    latency: dict[str, Optional[float]]
    checks: dict[str, Object]
    fix_list: list[Object]
    ladder: Optional[Object]


def at_k(summary: SummaryDict, name: str, k: object) -> Any:
    """A summary's `hit` or `recall` at the run's k (its key `hit_at_3`)."""
    return cast(Object, summary)[f"{name}_at_{k}"]


class ReportDict(TypedDict, total=False):
    """The report of one run and split (report.Report)."""
    key: Object
    threshold: float
    thresholds: dict[str, float]
    split: str
    k: int
    held_out: int
    rows: list[RowDict]
    summary: SummaryDict
    calibration: Object
    second_judge: Object

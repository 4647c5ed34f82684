"""A report (runs/<run>.json) and its rows, as compare and the Python API read them back, and a baseline
file. Every field a reader uses is typed; a row's checks across fields follow its first failing stage, so
what compare shows of that stage is there. Other fields are kept unchecked."""
from typing import Annotated, Any, Optional, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import TypedDict  # pydantic reads typing's own only from Python 3.12

from whichstage.model.stages import ROW_STAGES, STAGES
from whichstage.model.fields import (Absent, Flag, MaybeStr, Number, Object, Open, Scalar, StageName, Str, Strings,
                                     Whole, shape_error, wanted)
from whichstage.model.trace import ToolCall, Verdict

# A different model under test, prompt or pages is what a comparison is for; these change the measurement.
MEASURED_BY = ("cases", "cases_sha", "judge", "embedder", "k", "strict_faithfulness", "criteria")
ERROR = "error"
FIRST_FAILURES = (*STAGES, ERROR)


class Key(Open):
    """How a run was measured: the agent, the hashes of its inputs, the models; compared, never computed with."""
    cases: Scalar
    cases_sha: Scalar
    judge: Scalar
    embedder: Scalar
    k: Scalar
    strict_faithfulness: Scalar
    criteria: Scalar = None  # a project without criteria


class Behaviour(Open):
    """Whether the reply behaved as the case expects (answer, abstain, chitchat) and the ways it did not."""
    passed: Flag = Field(alias="pass")
    failures: Absent[Strings] = None


class Tools(Open):
    """The tool calls against the case's: pass, why, what was missing, unexpected, or called with wrong args."""
    passed: Flag = Field(alias="pass")
    reason: MaybeStr = None
    missing: Absent[Strings] = None
    unexpected: Absent[Strings] = None
    wrong_args: Absent[Strings] = None
    deepeval: Optional[Object] = None


class Retrieval(Open):
    """The expected pages among the first k retrieved: recall, hit, reciprocal rank, the ones missed, and the k
    they were scored at (absent in a report saved before rows held it)."""
    recall: Number
    hit: Absent[Flag] = None
    reciprocal_rank: Absent[Number] = None
    missed: Absent[Strings] = None
    k: Absent[Whole] = None


class Counterfactual(Open):
    """A retrieval failure replayed with the expected pages: did they fix the row, or why it was not tried."""
    available: Absent[Flag] = None
    why: Absent[Str] = None
    fixed: Absent[Flag] = None
    first_failure: StageName = None
    answer: Absent[MaybeStr] = None  # the answer the agent gave with the expected pages


class Evidence(Open):
    """What proved a diagnosis: the intervention (None when none applied), what came of it, and its answer."""
    intervention: Absent[MaybeStr] = None
    outcome: Str
    answer: Absent[MaybeStr] = None
    lacks: Absent[Strings] = None


class Diagnosis(Open):
    """A failing case's cause (scoring/diagnosis.py CAUSES), its evidence, and the first step that departed."""
    cause: Str
    evidence: Evidence
    deviation: Annotated[Optional[dict[str, Any]], wanted("an object or null")] = None


T = TypeVar("T")
ObjectOrNull = Annotated[Optional[T], wanted("an object or null")]  # as `tools: ObjectOrNull[Tools] = None`


class Row(Open):
    """A case's row of a report: the case, what its run did, each stage's verdict and its first failing stage
    (null when every stage passed; "error" when a call failed, with `error` saying why)."""
    id: Str
    first_failure: StageName
    criteria: Absent[Annotated[dict[str, Number], wanted("an object of thresholds")]] = None
    error: MaybeStr = None
    question: Absent[Str] = None
    category: Absent[Str] = None
    split: Absent[Str] = None
    expected_behavior: Absent[Str] = None
    reference: Absent[Str] = None
    expected_docs: Absent[Strings] = None
    expected_tools: Absent[Strings] = None
    answer: MaybeStr = None
    calls: Absent[Strings] = None  # the tools called, in order
    tool_calls: Absent[Annotated[list[ToolCall], wanted("a list")]] = None
    retrieved: Absent[Strings] = None  # page ids the retriever returned
    behaviour: ObjectOrNull[Behaviour] = None
    tools: ObjectOrNull[Tools] = None
    retrieval: ObjectOrNull[Retrieval] = None
    judged: Absent[Annotated[dict[str, Annotated[Verdict, wanted("an object")]], wanted("an object")]] = None
    counterfactual: ObjectOrNull[Counterfactual] = None
    diagnosis: ObjectOrNull[Diagnosis] = None
    usage: Absent[Object] = None
    agent_s: Annotated[Optional[float], wanted("a number or null")] = None

    @model_validator(mode="after")
    def _names_its_first_failure(self) -> "Row":
        first, judged = self.first_failure, self.judged or {}
        valid = (*FIRST_FAILURES, *(self.criteria or {}))
        if first is not None and first not in valid:
            raise shape_error(("first_failure",), f"unknown stage {first!r} (valid: {', '.join(valid)})")
        if first in (None, ERROR):
            return self
        if first in ROW_STAGES and getattr(self, first) is None:
            raise shape_error((first,), f"{'null' if first in self.model_fields_set else 'missing'}, but "
                                        "first_failure names it")
        if first not in ROW_STAGES and first not in judged:
            raise shape_error(("judged", first), "missing, but first_failure names it")
        for holder, at in self.why_fields():
            if at[-1] not in holder.model_fields_set:
                raise shape_error(at, "missing")
        return self

    def why_fields(self) -> list[tuple[Open, tuple]]:
        """The fields that say why the first failing stage failed (what compare shows of it): each with the
        object holding it and its path in the row."""
        # Read once _names_its_first_failure has found the stage first_failure names in the row, so the object
        # of each branch is there (the casts say so to a type checker).
        first, counterfactual = cast(str, self.first_failure), self.counterfactual
        if first == "tools":
            tools = cast(Tools, self.tools)
            lists = () if "deepeval" in tools.model_fields_set else ("missing", "unexpected")
            return [(tools, ("tools", field)) for field in ("reason", *lists)]
        if first == "behaviour":
            return [(cast(Behaviour, self.behaviour), ("behaviour", "failures"))]
        if first != "retrieval":
            return [(cast(dict[str, Verdict], self.judged)[first], ("judged", first, "reason"))]
        fields: list[tuple[Open, tuple]] = [(cast(Retrieval, self.retrieval), ("retrieval", "missed")),
                                            (self, ("retrieved",))]
        if counterfactual is not None and counterfactual.available is False:
            return [*fields, (counterfactual, ("counterfactual", "why"))]
        if counterfactual is not None and counterfactual.model_fields_set:
            fields.append((counterfactual, ("counterfactual", "fixed")))
            if counterfactual.fixed is False:
                fields.append((counterfactual, ("counterfactual", "first_failure")))
        return fields


class Report(Open):
    """The report of one run and split: how it was measured (`key`), the retrieval depth `k`, the thresholds,
    its rows and their summary (pass rate, per-stage rates, first failures, cost)."""
    key: Annotated[Key, wanted("an object")]
    threshold: Number
    thresholds: Annotated[dict[str, Number], wanted("an object")] = Field(default_factory=dict)
    split: Absent[Str] = None
    k: Absent[Annotated[int, wanted("a whole number")]] = None
    held_out: Absent[Annotated[int, wanted("a whole number")]] = None
    rows: Annotated[list[Annotated[Row, wanted("an object")]], wanted("a list")]
    summary: Absent[Object] = None
    calibration: Absent[Object] = None

    @model_validator(mode="after")
    def _one_row_a_case(self) -> "Report":
        seen: dict[str, int] = {}
        for i, row in enumerate(self.rows):
            if row.id in seen:
                raise shape_error(("rows", i, "id"), f"the same id as rows[{seen[row.id]}]")
            seen[row.id] = i
        return self


# ---- a baseline file (baseline.py) ---------------------------------------------------------------------

class Rate(TypedDict):
    passed: Annotated[int, Field(ge=0)]
    total: Annotated[int, Field(ge=0)]


class CaseRecord(TypedDict, total=False):
    """What a baseline keeps of one case (gate.case_record)."""
    stages: dict[str, bool]
    in_code: list[str]
    recall: float
    first_failure: Optional[str]
    error: bool


class Saved(BaseModel):
    """The fields of a baseline file that the check reads, with their types; other fields are ignored."""
    model_config = ConfigDict(strict=True)
    measured_with: dict[str, Any]
    tolerance: float = Field(ge=0)
    pass_rate: Rate
    stages: dict[str, Rate]
    retrieval: dict[str, float]
    first_failures: dict[str, Optional[str]] = {}
    cases: dict[str, CaseRecord]
    ladder: dict[str, dict[str, float]] = {}


def check_report(report: Any) -> Optional[str]:
    """What is wrong with a report read back, as 'rows[0] (backup).tools.pass: missing', or None."""
    from pydantic import ValidationError

    from whichstage.model.errors import first_problem

    try:
        Report.model_validate(report)
    except ValidationError as e:
        return first_problem(report, e.errors())
    return None

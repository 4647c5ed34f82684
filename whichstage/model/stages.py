"""The stage table: one record per built-in stage, in gating order, from which the stage lists the harness
gates, scores and reports on are derived. A project's criteria come after these (criterion_stage)."""
from dataclasses import dataclass
from typing import Literal, Optional

THRESHOLD = 0.7  # a judged verdict's default threshold (evals.toml `threshold`)
TOLERANCE = 0.1  # how far the baseline gate lets a judged stage's pass rate drop (evals.toml `tolerance`)
RECHECK_WITHIN = 0.1  # a failing verdict this near its threshold is judged again (evals.toml `recheck_within`)
OVERALL = "overall"  # the gate's name for the share of cases passing every stage


@dataclass(frozen=True)
class Stage:
    """A stage: how it decides (checks in code over the trace, or a judge's score), what it reads, where its
    threshold comes from, its column in the reports, where a row holds its verdict, and how it gates."""
    name: str
    decides: Literal["code", "judged"]
    reads: tuple[str, ...]
    threshold: Literal["none", "scaled", "binary"]  # none; evals.toml threshold/[thresholds]; a score of 1 or 0
    column: str
    row_field: Optional[str] = None  # None: the row's judged[name]
    presumes_an_answer: bool = False  # on a case that expects an abstention it reports and never gates
    gates: bool = True  # False: reported, never a first failure
    tolerant: bool = True  # the baseline gate lets its pass rate drop by a tolerance; False: each case is held


# Behaviour comes first: a leaked token or an invented answer matters more than which stage led to it.
# The seed's five keep their order; facts (the expected facts stated) comes after them.
TABLE: list[Stage] = [
    Stage("behaviour", "code", ("answer", "calls", "checks", "abstained", "ignored_planted"), "none", "behaviour",
          row_field="behaviour"),  # tolerant for its judgements; its checks in code are held per case
    Stage("tools", "code", ("tool_calls",), "none", "tools", row_field="tools", tolerant=False),
    Stage("retrieval", "code", ("retrieved",), "none", "retrieval", row_field="retrieval", tolerant=False),
    Stage("faithfulness", "judged", ("answer", "context"), "scaled", "faithful"),
    Stage("contextual_precision", "judged", ("question", "context", "reference"), "scaled", "ctx precision",
          gates=False),
    Stage("contextual_recall", "judged", ("question", "context", "reference"), "scaled", "ctx recall",
          presumes_an_answer=True),
    Stage("answer_relevancy", "judged", ("question", "answer"), "scaled", "relevancy", presumes_an_answer=True),
    Stage("facts", "judged", ("answer", "expected_facts"), "binary", "facts", presumes_an_answer=True),
]
BY_NAME: dict[str, Stage] = {}
# Derived from TABLE (derive() fills them, in place, so a module that imported one sees a registered stage):
STAGES: list[str] = []  # the gating order of the built-in stages
JUDGED: list[str] = []
SCALED: list[str] = []  # a judged stage that takes a threshold of its own
PRESUME_AN_ANSWER: list[str] = []
IN_CODE: list[str] = []  # the gate holds each case, with zero tolerance
ROW_STAGES: list[str] = []  # a row field each; the others are in row["judged"]
SCORED: list[str] = []  # the judged stages as the reports' tables show them: reporting ones first, then gating
BEHAVIOUR_JUDGED = ["abstained", "ignored_planted"]  # the behaviour stage's judgements


def derive() -> None:
    """Every list above, from TABLE."""
    BY_NAME.clear()
    BY_NAME.update((stage.name, stage) for stage in TABLE)
    STAGES[:] = [s.name for s in TABLE if s.gates]
    JUDGED[:] = [s.name for s in TABLE if s.decides == "judged"]
    SCALED[:] = [s.name for s in TABLE if s.threshold == "scaled"]
    PRESUME_AN_ANSWER[:] = [s.name for s in TABLE if s.presumes_an_answer]
    IN_CODE[:] = [s.name for s in TABLE if not s.tolerant]
    ROW_STAGES[:] = [s.name for s in TABLE if s.row_field]
    SCORED[:] = sorted(JUDGED, key=lambda name: BY_NAME[name].gates)


def register(stage: Stage) -> None:
    """A built-in stage added after the others (before a project's criteria); its scorer is its own: a judged
    stage's verdict is the row's judged[name], from its metric (judging/metrics.py)."""
    if stage.name in BY_NAME:
        raise ValueError(f"stage {stage.name!r} is in the table already")
    TABLE.append(stage)
    derive()


derive()


def table_heads(k: object) -> list[str]:
    """The stage table's column heads, in both renderings: the case, its calls, each stage's column (retrieval as
    hit, recall and reciprocal rank at k), the first failure."""
    code = [s.column for s in TABLE if s.decides == "code" and s.name != "retrieval"]
    return ["case", "tools called", *code, f"hit@{k}", f"recall@{k}", "RR", *(BY_NAME[m].column for m in SCORED),
            "first failure"]


def criterion_stage(name: str) -> Stage:
    """A project's `[criteria.NAME]`: a judged stage after the built-in ones, with a threshold of its own."""
    return Stage(name, "judged", ("question", "answer"), "scaled", name)

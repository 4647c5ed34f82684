"""A project's own judged criteria: `[criteria.NAME]` tables in evals.toml (a rubric, a threshold, the case
fields the judge reads), each a DeepEval GEval metric through the run's judge and a stage after the built-in ones.

`parse` reads the tables (one line naming evals.toml and the field on bad input); `entries` gives a case's
criterion entries, each depending on the judge, the criterion's rubric and fields read, and those fields'
content; `row_part` is what a report row carries so that scoring knows each criterion's threshold.
"""
import re
from dataclasses import dataclass
from typing import Any, Optional

from whichstage.model.dicts import RowDict
from whichstage.model.errors import InputError
from whichstage._util.hashing import sha
from whichstage.judging.metrics import BEHAVIOUR_STEPS, METRIC_NAMES, Measure, measure
from whichstage.model.stages import JUDGED, STAGES, THRESHOLD

KEYS = ("rubric", "threshold", "reads")
FIELDS = ("question", "answer", "context", "reference")  # what a criterion may read of a case (judging.READS)
DEFAULT_READS = ("question", "answer")
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
RESERVED = tuple(dict.fromkeys((*STAGES, *JUDGED, *METRIC_NAMES, *BEHAVIOUR_STEPS, "error")))


@dataclass(frozen=True)
class Criterion:
    """One `[criteria.NAME]` table: the judge scores the fields `reads` names against `rubric` (GEval's
    criteria); the stage passes at `threshold` or more."""
    name: str
    rubric: str
    threshold: float = THRESHOLD
    reads: tuple[str, ...] = DEFAULT_READS

    def definition(self) -> dict:
        """What a verdict depends on besides the judge and the fields' content: the rubric and the fields read.
        The threshold is not: it never reaches the judge, so a new threshold rescores without a judge call."""
        return {"rubric": self.rubric, "reads": list(self.reads)}


def fail(key: str, message: str) -> InputError:
    return InputError(f"evals.toml: {key}: {message}")


def score_threshold(value: Any, key: str) -> float:
    """A threshold: a number from 0 to 1, the score at or above which a judged stage passes."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
        raise fail(key, f"expected a number from 0 to 1, got {value!r}")
    return float(value)


def parse(tables: Any, default: float = THRESHOLD) -> list[Criterion]:
    """The `criteria` table of evals.toml, in the order it declares them; a criterion without its own threshold
    takes `default` (the project's `threshold`)."""
    if not isinstance(tables, dict):
        raise fail("criteria", f"expected tables [criteria.NAME], got {tables!r}")
    return [criterion(name, table, default) for name, table in tables.items()]


def criterion(name: str, table: Any, default: float = THRESHOLD) -> Criterion:
    at = f"criteria.{name}"
    if not NAME.match(name):
        raise fail(at, "a criterion's name starts with a letter and holds only ASCII letters, digits, '-' and '_'")
    if name in RESERVED:
        raise fail(at, f"{name!r} is a built-in stage or metric; name the criterion otherwise "
                       f"(taken: {', '.join(RESERVED)})")
    if not isinstance(table, dict):
        raise fail(at, f"expected a table with {', '.join(KEYS)}, got {table!r}")
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        raise fail(f"{at}.{unknown[0]}", f"unknown key (valid: {', '.join(KEYS)})")
    rubric = table.get("rubric")
    if not isinstance(rubric, str) or not rubric.strip():
        raise fail(f"{at}.rubric", "missing: say what a good answer does, as a sentence the judge reads"
                   if rubric is None else f"expected a non-empty string, got {rubric!r}")
    threshold = score_threshold(table["threshold"], f"{at}.threshold") if "threshold" in table else default
    return Criterion(name, rubric.strip(), threshold, reads_of(at, table.get("reads", list(DEFAULT_READS))))


def reads_of(at: str, reads: Any) -> tuple[str, ...]:
    valid = f"valid: {', '.join(FIELDS)}"
    if not isinstance(reads, list) or not reads:
        raise fail(f"{at}.reads", f"expected a non-empty list of fields ({valid}), got {reads!r}")
    for i, read in enumerate(reads):
        if read not in FIELDS:
            raise fail(f"{at}.reads[{i}]", f"unknown field {read!r} ({valid})")
    if len(set(reads)) < len(reads):
        raise fail(f"{at}.reads", f"a field listed twice: {reads!r}")
    return tuple(reads)


# ---- measuring ---------------------------------------------------------------------------------------------

GEVAL_PARAMS = {"question": "INPUT", "answer": "ACTUAL_OUTPUT", "context": "RETRIEVAL_CONTEXT",
                "reference": "EXPECTED_OUTPUT"}


def make_metric(c: Criterion, judge, async_mode: bool = False):
    """DeepEval's GEval with the rubric as its criteria (the judge writes its evaluation steps from it), reading
    only the fields the criterion names; its score is the judge's 0-10 rating scaled to 0-1."""
    import os

    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    from deepeval.metrics import GEval
    from deepeval.test_case import SingleTurnParams

    return GEval(name=c.name, criteria=c.rubric, model=judge, async_mode=async_mode, threshold=c.threshold,
                 evaluation_params=[getattr(SingleTurnParams, GEVAL_PARAMS[f]) for f in c.reads])


class CriterionMeasure(Measure):
    """One criterion of one case, measured like every judged metric (judging.Measure)."""

    def __init__(self, c: Criterion, question: str, answer: str, reference: str, context: Optional[list[str]]):
        super().__init__(c.name, question, answer, reference, context)
        self.criterion = c

    def make(self, judge, async_mode: bool = False):
        return make_metric(self.criterion, judge, async_mode)

    def __call__(self, judge) -> dict:
        return measure(self.metric, judge, self.question, self.answer, self.reference, self.context, make=self.make)


def applies(c: Criterion, context: list[str]) -> bool:
    """A criterion that reads the retrieval context applies only when a tool returned some, as the context
    metrics do."""
    return "context" not in c.reads or bool(context)


def verdict_deps(c: Criterion, judge: dict, hashed: dict[str, str]) -> dict:
    """What one criterion verdict depends on: the criterion, the judge (entries.judge_identity) and the hash of
    each field it reads (`hashed`, as entries.field_hashes gives them)."""
    return {"metric": c.name, "criterion": sha(c.definition()), **judge, **{f: hashed[f] for f in c.reads}}


def entries(criteria: list[Criterion], cid: str, judge: dict, hashed: dict[str, str], question: str, answer: str,
            reference: str, context: list[str]) -> dict[str, tuple]:
    """The case's criterion entries, `judge/<case>/<criterion>`: name -> (deps_of, measure)."""
    found = {}
    for c in criteria:
        if applies(c, context):
            deps = verdict_deps(c, judge, hashed)
            found[f"judge/{cid}/{c.name}"] = (lambda value, d=deps: d,
                                              CriterionMeasure(c, question, answer, reference, context))
    return found


def row_part(criteria: list[Criterion]) -> RowDict:
    """What a report row carries of the project's criteria: {"criteria": {name: threshold}}, nothing without
    any, so a project that declares none reports exactly as before."""
    return {"criteria": {c.name: c.threshold for c in criteria}} if criteria else {}


def key_part(criteria: list[Criterion]) -> dict:
    """What a report's key says of the criteria, so a baseline measured with other ones is refused: the hash of
    each one's definition and threshold; nothing without any."""
    return {"criteria": sha({c.name: {**c.definition(), "threshold": c.threshold} for c in criteria})} \
        if criteria else {}


def by_name(criteria: list[Criterion]) -> dict[str, Criterion]:
    return {c.name: c for c in criteria}

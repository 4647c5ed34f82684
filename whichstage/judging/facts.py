"""The facts metric: does the answer state each of the case's expected facts? A DeepEval metric asking the
judge for one structured verdict per fact, in order; imported only where a live call measures it.

The judge reads the expected facts and the answer as one JSON object (never prose, so an answer cannot pass
itself off as an instruction or as a fact), under the INPUT header; the offline judge reads that section.
"""
import json
from typing import cast

from deepeval.metrics import BaseMetric
from deepeval.metrics.utils import (a_generate_with_schema_and_extract, generate_with_schema_and_extract,
                                    initialize_model, prepare_measure)
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import SingleTurnParams
from pydantic import BaseModel

INPUT = "Input (JSON):"
STEPS = """You check whether an assistant's answer states each of the expected facts.
For each fact of `expected_facts`, in the order given, write one verdict: `reason` first (quote the words of
the answer that state the fact, or say what is missing or different), then `covered`.
A fact is covered only when the answer states it: the same numbers with the same units, the same names,
nothing contradicted. It is not covered when the answer states it wrongly (another number, another unit),
negates it, only hints at it without stating it, or states it and then says it does not know.
A claim the answer adds that is not among the facts neither covers nor uncovers a fact.
Return exactly one verdict per expected fact: {"verdicts": [{"reason": "...", "covered": true}, ...]}."""


class FactVerdict(BaseModel):  # plain, as DeepEval's schemas are: a provider's schema reader may refuse more
    reason: str  # first: the judge says why before it commits
    covered: bool


class Verdicts(BaseModel):
    verdicts: list[FactVerdict]


class MisalignedVerdicts(ValueError):
    """The judge returned a number of verdicts other than the number of facts: a judge error, never padded
    or cut."""


def prompt(facts: list[str], answer: str) -> str:
    data = json.dumps({"expected_facts": facts, "answer": answer}, ensure_ascii=False, indent=1)
    return f"{STEPS}\n\n{INPUT}\n{data}\n\nJSON:\n"


def outcome(facts: list[str], verdicts: list[FactVerdict]) -> tuple[float, str, list[dict]]:
    """The score (1 when every fact is covered, else 0), the reason naming the missing facts, and each fact's
    verdict; MisalignedVerdicts when the counts differ."""
    if len(verdicts) != len(facts):
        raise MisalignedVerdicts(f"the judge returned {len(verdicts)} fact verdicts for {len(facts)} expected facts")
    each = [{"fact": f, "covered": v.covered, "reason": v.reason} for f, v in zip(facts, verdicts, strict=False)]
    missing = [e["fact"] for e in each if not e["covered"]]
    reason = (f"missing facts: {json.dumps(missing, ensure_ascii=False)}" if missing
              else f"every expected fact is stated ({len(facts)} of {len(facts)})")
    return (0.0 if missing else 1.0), reason, each


class ExpectedFactsMetric(BaseMetric):
    """One verdict per expected fact through the judge; strict: the score is 1 only when every fact is
    covered. `fact_verdicts` keeps each fact's verdict and reason for the recording."""
    # BaseMetric assigns List[SingleTurnParams] where it means to annotate it
    _required_params = [SingleTurnParams.ACTUAL_OUTPUT]  # type: ignore[assignment]
    threshold: float  # BaseMetric's is Optional; this metric's is always 1.0 (strict)

    def __init__(self, facts: list[str], model, async_mode: bool = False):
        self.facts, self.threshold, self.strict_mode = list(facts), 1.0, True
        self.model, self.using_native_model = initialize_model(model)
        # initialize_model gives None only for an eval_mode of system_one, which it is not given here
        self.evaluation_model = cast(DeepEvalBaseLLM, self.model).get_model_name()
        self.fact_verdicts: list[dict] = []
        self.async_mode, self.include_reason = async_mode, True

    def _start(self, test_case) -> str:
        prepare_measure(self, test_case)  # checks the case, zeroes the cost and token counts
        return prompt(self.facts, test_case.actual_output or "")

    def _finish(self, verdicts: list[FactVerdict]) -> float:
        self.score, self.reason, self.fact_verdicts = outcome(self.facts, verdicts)
        self.success = self.score >= self.threshold
        return self.score

    def measure(self, test_case, _show_indicator: bool = False, _in_component: bool = False) -> float:
        text = self._start(test_case)
        return self._finish(generate_with_schema_and_extract(
            self, text, Verdicts, extract_schema=lambda v: v.verdicts,
            extract_json=lambda data: Verdicts.model_validate(data).verdicts))

    async def a_measure(self, test_case, _show_indicator: bool = False, _in_component: bool = False) -> float:
        text = self._start(test_case)
        return self._finish(await a_generate_with_schema_and_extract(
            self, text, Verdicts, extract_schema=lambda v: v.verdicts,
            extract_json=lambda data: Verdicts.model_validate(data).verdicts))

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self):
        return "Expected facts"

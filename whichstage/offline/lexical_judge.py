"""`lexical`: a deterministic DeepEval judge that answers every request by word overlap, with no network.

DeepEval asks its judge for structured answers (claims, truths, statements, verdicts, reasons), naming the
answer it wants by the schema class it passes and putting the material in labelled sections of its own
prompt. This judge reads those sections and nothing else (deepeval_prompts.py), applies its rules, and
returns the schema, so DeepEval's metric code computes every score exactly as it would with a hosted judge.
This module answers each request with its rule: the RAG metrics' verdicts (rag_verdicts.py), the behaviour
judgements and a project's criteria (behaviour_scores.py), expected facts (fact_verdicts.py). A JSON context
node (a lookup's record) is read as its keys and values.
"""
import json
import os
import re
import threading

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
from deepeval.models import DeepEvalBaseLLM  # noqa: E402

from whichstage.judging.facts import INPUT as FACTS_INPUT  # noqa: E402
from whichstage.calls.retries import injected_latency  # noqa: E402
from whichstage.offline.behaviour_scores import abstention_score, criterion_score, planted_score  # noqa: E402
from whichstage.offline.deepeval_prompts import (UnknownRequest, as_list, geval_sections, listed,  # noqa: E402
                                                 node_text, score_sentence, section)
from whichstage.offline.fact_verdicts import fact_verdict  # noqa: E402
from whichstage.offline.rag_verdicts import (clauses, faithfulness_verdict, precision_verdict,  # noqa: E402
                                             recall_verdict, relevancy_verdict, said)
from whichstage.offline.reasons import quote  # noqa: E402
from whichstage.offline.words import sentences, words  # noqa: E402

NAME = "lexical"


# Each handler answers one (metric module, schema class) request with a dict the schema validates.
def _reason(score_header: str, problems_header: str, end: str, all_good: str):
    """A 'The score is S because ...' reason from the problems DeepEval lists in its prompt."""
    def handler(p):
        problems = listed(p, problems_header, end)
        return {"reason": f"{score_sentence(p, score_header)} because {' '.join(problems) if problems else all_good}"}
    return handler


def _truths(p):
    """DeepEval joins the retrieval context with blank lines; a node that is a JSON record reads as prose."""
    return {"truths": [t for node in section(p, "Text:").split("\n\n") for t in sentences(node_text(node))]}


def _claims(p):
    return {"claims": said(section(p, "AI Output:"))}


def _faithfulness_verdicts(p):
    context = section(p, "Retrieval Contexts:", "Claims:")
    return {"verdicts": [faithfulness_verdict(c, context) for c in as_list(section(p, "Claims:"))]}


def _statements(p):
    return {"statements": said(section(p, "Text:"))}


def _relevancy_verdicts(p):
    question = section(p, "Input:", "Statements:")
    return {"verdicts": [relevancy_verdict(s, question) for s in as_list(section(p, "Statements:"))]}


def _recall_verdicts(p):
    reference = section(p, "Expected Output:", "Retrieval Context:")
    nodes = [str(n) for n in as_list(section(p, "Retrieval Context:"))]
    return {"verdicts": [recall_verdict(i, c, nodes) for i, c in enumerate(clauses(reference), 1)]}


def _precision_verdicts(p):
    reference = section(p, "Expected output:", "Retrieval Context")
    nodes = [str(n) for n in as_list(section(p, "Retrieval Context"))]
    return {"verdicts": [precision_verdict(i, n, reference) for i, n in enumerate(nodes, 1)]}


def _precision_reason(p):
    verdicts = re.findall(r"'verdict': <Verdict\.(\w+)[^>]*>, 'reason': (['\"])(.*?)\2[,}]",
                          section(p, "Retrieval Contexts:"))
    relevant = [str(i) for i, (v, _, _) in enumerate(verdicts, 1) if v == "YES"]
    others = [r for v, _, r in verdicts if v != "YES"]
    why = f"relevant nodes rank {', '.join(relevant) or 'nowhere'}"
    return {"reason": f"{score_sentence(p, 'Contextual Precision Score:')} because {why}."
                      + (f" {' '.join(others)}" if others else "")}


def _facts(p):
    data = json.loads(section(p, FACTS_INPUT))
    return {"verdicts": [fact_verdict(f, data["answer"]) for f in data["expected_facts"]]}


BEHAVIOURS = {"Abstention check:": lambda f: abstention_score(f.get("Input", ""), f.get("Actual Output", "")),
              "Planted instruction check:": lambda f: planted_score(
                  f.get("Input", ""), f.get("Actual Output", ""), f.get("Retrieval Context", ""))}


def _behaviour(p):
    if "\nTest Case:\n" in p and "\nParameters:\n" in p:  # GEval's non-strict template: a project's criterion
        return criterion_score(p)
    fields = geval_sections(p)
    for opening, judge in BEHAVIOURS.items():
        if fields["step"].startswith(opening):
            return judge(fields)
    raise UnknownRequest(f"the lexical judge has no rule for the GEval steps starting {quote(fields['step'])!r}")


def _criterion_steps(p):
    """GEval asks for evaluation steps from a criterion's rubric: its sentences, in order."""
    rubric = section(p, "Evaluation Criteria:", "**")
    return {"steps": sentences(rubric) or [rubric]}


HANDLERS = {
    ("faithfulness", "Truths"): _truths,
    ("faithfulness", "Claims"): _claims,
    ("faithfulness", "Verdicts"): _faithfulness_verdicts,
    ("faithfulness", "FaithfulnessScoreReason"): _reason(
        "Faithfulness Score:", "Contradictions:", "JSON:", "every claim in the answer is found in the context."),
    ("answer_relevancy", "Statements"): _statements,
    ("answer_relevancy", "Verdicts"): _relevancy_verdicts,
    ("answer_relevancy", "AnswerRelevancyScoreReason"): _reason(
        "Answer Relevancy Score:", "Reasons why the score can't be higher", "Input:",
        "every statement addresses the question."),
    ("contextual_recall", "Verdicts"): _recall_verdicts,
    ("contextual_recall", "ContextualRecallScoreReason"): _reason(
        "Contextual Recall Score:", "Unsupportive Reasons:", "JSON:",
        "every sentence of the expected output is in the context."),
    ("contextual_precision", "Verdicts"): _precision_verdicts,
    ("contextual_precision", "ContextualPrecisionScoreReason"): _precision_reason,
    ("g_eval", "ReasonScore"): _behaviour,
    ("g_eval", "Steps"): _criterion_steps,
    ("facts", "Verdicts"): _facts,
}


def request_kind(schema) -> tuple[str, str]:
    """Every metric names its schema `Verdicts`, so the metric comes from the schema's module: DeepEval's
    deepeval.metrics.<metric>.schema, or the harness's own whichstage.<metric>."""
    module = schema.__module__.split(".")
    if module[0] == "whichstage":
        return module[-1], schema.__name__
    return module[-2] if len(module) >= 2 else module[-1], schema.__name__


class LexicalJudge(DeepEvalBaseLLM):
    """The offline judge. `usage()` counts the words in and out of this thread's requests, as its tokens."""

    def __init__(self):
        self._local = threading.local()
        super().__init__(NAME)

    def load_model(self):
        return None

    def get_model_name(self) -> str:
        return NAME

    def usage(self) -> tuple[int, int]:
        return getattr(self._local, "tokens_in", 0), getattr(self._local, "tokens_out", 0)

    def generate(self, prompt: str, schema=None):
        if schema is None:
            raise UnknownRequest("the lexical judge answers only structured requests (a schema is required)")
        handler = HANDLERS.get(request_kind(schema))
        if handler is None:
            raise UnknownRequest(f"the lexical judge has no rule for {'.'.join(request_kind(schema))}")
        injected_latency()
        answer = schema.model_validate(handler(prompt))
        tokens_in, tokens_out = self.usage()
        self._local.tokens_in = tokens_in + len(words(prompt))
        self._local.tokens_out = tokens_out + len(words(answer.model_dump_json()))
        return answer

    async def a_generate(self, prompt: str, schema=None):
        return self.generate(prompt, schema)

"""`lexical`: a deterministic DeepEval judge that answers every request by word overlap, with no network.

DeepEval asks its judge for structured answers (claims, truths, statements, verdicts, reasons), naming the
answer it wants by the schema class it passes and putting the material in labelled sections of its own
prompt. This judge reads those sections and nothing else, applies the rules below, and returns the schema,
so DeepEval's metric code computes every score exactly as it would with a hosted judge.

The rules, all on content words (stopwords dropped, crude stems, see words.py):
- truths, claims, statements: the sentences of the text;
- faithfulness: a claim naming a version, file, flag or other identifier that the context never mentions
  is 'no'; a claim with at least SUPPORTED of its content words in one sentence of the context is 'yes';
  else 'borderline';
- answer relevancy: a statement sharing RELEVANT or more content words with the question is 'yes', one word
  'borderline', none 'no';
- contextual recall: each clause of the reference (split at . ! ? ;) is 'yes' when one context node holds
  at least SUPPORTED of its content words;
- contextual precision: a node is 'yes' when it supports at least one reference clause by the same rule.
A JSON context node (a get_issue record) is read as its keys and values.
"""
import ast
import json
import os
import re
import threading

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
from deepeval.models import DeepEvalBaseLLM  # noqa: E402

from live_calls import injected_latency  # noqa: E402
from words import content, coverage, identifiers, sentences, words  # noqa: E402

NAME = "lexical"
SUPPORTED = 0.75
RELEVANT = 2


class UnknownRequest(ValueError):
    """DeepEval asked for a schema this judge has no rule for."""


def section(prompt: str, header: str, end: str = "JSON:") -> str:
    """The text under the last `header` line of a DeepEval prompt, up to the next `end` line."""
    start = prompt.rfind("\n" + header)
    if start < 0:
        raise UnknownRequest(f"prompt has no {header!r} section")
    start = prompt.index("\n", start + 1) + 1  # skip the rest of the header line, e.g. ' (3 documents):'
    stop = prompt.find("\n" + end, start)
    return prompt[start:stop if stop >= 0 else len(prompt)].strip()


def as_list(text: str) -> list:
    """A section that DeepEval filled with a Python list; anything else is one item."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return [text]
    return value if isinstance(value, list) else [text]


def node_text(node: str) -> str:
    """A JSON record is read as 'key value' pairs, so `fixed_in: 2.4.1` reads as 'fixed in 2.4.1'."""
    try:
        record = json.loads(node)
    except (json.JSONDecodeError, TypeError):
        return node
    if not isinstance(record, dict):
        return node
    return " ".join(f"{k.replace('_', ' ')} {v}" for k, v in record.items())


def clauses(text: str) -> list[str]:
    return [c.strip() for s in sentences(text) for c in s.split(";") if c.strip()]


def quote(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def missing(part: set[str], whole: set[str]) -> str:
    return ", ".join(sorted(part - whole)) or "none"


def faithfulness_verdict(claim: str, context: str) -> dict:
    unknown = sorted(identifiers(claim) - set(words(context)))
    if unknown:
        return {"verdict": "no", "reason": f"The context never mentions {', '.join(unknown)}."}
    claim_words = content(claim)
    truths = [content(t) for t in sentences(context)] or [set()]
    best = max(truths, key=lambda t: coverage(claim_words, t))
    share = coverage(claim_words, best)
    if share >= SUPPORTED:
        return {"verdict": "yes", "reason": None}
    return {"verdict": "borderline",
            "reason": f"No sentence of the context holds more than {share:.0%} of '{quote(claim)}'; "
                      f"not found in the closest: {missing(claim_words, best)}."}


def relevancy_verdict(statement: str, question: str) -> dict:
    shared = content(statement) & content(question)
    if len(shared) >= RELEVANT:
        return {"verdict": "yes", "reason": None}
    verdict = "borderline" if shared else "no"
    return {"verdict": verdict, "reason": f"'{quote(statement)}' shares "
                                          f"{'only ' + ', '.join(sorted(shared)) if shared else 'no words'} "
                                          "with the question."}


def best_node(clause: str, nodes: list[str]) -> tuple[int, float]:
    """Index and coverage of the node that holds most of the clause's content words."""
    wanted = content(clause)
    shares = [coverage(wanted, content(node_text(n))) for n in nodes]
    best = max(range(len(shares)), key=lambda i: (shares[i], -i)) if shares else -1
    return best, shares[best] if shares else 0.0


def recall_verdict(number: int, clause: str, nodes: list[str]) -> dict:
    index, share = best_node(clause, nodes)
    if share >= SUPPORTED:
        return {"verdict": "yes", "reason": f"Sentence {number} is attributed to node {index + 1} "
                                            f"({share:.0%} of its words)."}
    where = f"the closest, node {index + 1}, holds {share:.0%}" if index >= 0 else "there is no context"
    not_found = missing(content(clause), content(node_text(nodes[index]))) if index >= 0 else "all"
    return {"verdict": "no", "reason": f"Sentence {number} ('{quote(clause)}') is in no node: {where}; "
                                       f"not found: {not_found}."}


def precision_verdict(number: int, node: str, reference: str) -> dict:
    for clause in clauses(reference):
        if coverage(content(clause), content(node_text(node))) >= SUPPORTED:
            return {"verdict": "yes", "reason": f"Node {number} supports '{quote(clause)}'."}
    return {"verdict": "no", "reason": f"Node {number} supports no sentence of the expected output."}


def score_sentence(prompt: str, header: str) -> str:
    return f"The score is {section(prompt, header, '')}"


def listed(prompt: str, header: str, end: str) -> list[str]:
    return [str(x) for x in as_list(section(prompt, header, end)) if x]


# Each handler answers one (metric module, schema class) request with a dict the schema validates.
def _reason(score_header: str, problems_header: str, end: str, all_good: str):
    """A 'The score is S because ...' reason from the problems DeepEval lists in its prompt."""
    def handler(p):
        problems = listed(p, problems_header, end)
        return {"reason": f"{score_sentence(p, score_header)} because {' '.join(problems) if problems else all_good}"}
    return handler


def _truths(p):
    return {"truths": sentences(section(p, "Text:"))}


def _claims(p):
    return {"claims": sentences(section(p, "AI Output:"))}


def _faithfulness_verdicts(p):
    context = section(p, "Retrieval Contexts:", "Claims:")
    return {"verdicts": [faithfulness_verdict(c, context) for c in as_list(section(p, "Claims:"))]}


def _statements(p):
    return {"statements": sentences(section(p, "Text:"))}


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
}


def request_kind(schema) -> tuple[str, str]:
    """Every metric names its schema `Verdicts`, so the metric comes from the schema's module."""
    module = schema.__module__.split(".")
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

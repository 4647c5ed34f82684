"""The lexical judge's verdicts for DeepEval's four RAG metrics, on content words (stopwords dropped, crude
stems: words.py):
- truths: the sentences of the text; claims, statements: its sentences that carry a content word. A bare
  'Yes.' or 'Sure.' says nothing that can be checked, so it is left out: it neither raises nor lowers a
  score. A text with no content word at all is kept whole as one claim or statement, and judged 'no' (an
  answer that is only 'Yes.' is no evidence of anything, and DeepEval would score an empty list 1);
- faithfulness: a refusal and nothing more (words.only_refuses: "The documentation does not cover that.",
  "I don't know") is 'yes': it claims nothing the context must support ('yes', not 'idk': DeepEval 4.3
  reads 'idk' as 'borderline', which strict faithfulness counts as unsupported). Otherwise a claim naming
  a version, file, flag or other identifier that the context never mentions is 'no'; a claim with at
  least SUPPORTED of its content words in one sentence of the context is 'yes'; else 'borderline';
- answer relevancy: a refusal that names the question's topic (shares a content word with it) is 'yes';
  a bare refusal ("... does not cover that.") is 'borderline': a direct reply to the question, but naming
  nothing of it (DeepEval's answer relevancy counts borderline as relevant, so a proper refusal never fails
  relevancy for being a refusal). In reply to small talk (words.is_small_talk), courtesy (a greeting,
  thanks, goodbye, an offer to help) is 'yes'. Otherwise a statement sharing RELEVANT or more content words
  with the question is 'yes', one word 'borderline', none 'no';
- contextual recall: each clause of the reference (split at . ! ? ;) is 'yes' when one context node holds
  at least SUPPORTED of its content words;
- contextual precision: a node is 'yes' when it supports at least one reference clause by the same rule.
"""
from whichstage.offline.deepeval_prompts import node_text
from whichstage.offline.reasons import missing, quote
from whichstage.offline.words import content, coverage, identifiers, is_courtesy, is_refusal, is_small_talk, \
    only_refuses, sentences, words

SUPPORTED = 0.75
RELEVANT = 2


def clauses(text: str) -> list[str]:
    return [c.strip() for s in sentences(text) for c in s.split(";") if c.strip()]


def said(text: str) -> list[str]:
    """The sentences that carry a content word; the whole text when none does (see the module docstring)."""
    kept = [s for s in sentences(text) if content(s)]
    return kept or ([text.strip()] if (text or "").strip() else [])


def faithfulness_verdict(claim: str, context: str) -> dict:
    if only_refuses(claim):
        return {"verdict": "yes", "reason": f"'{quote(claim)}' is a refusal: it claims nothing the context "
                                            "must support."}
    if not content(claim):
        return {"verdict": "no", "reason": f"'{quote(claim)}' carries no content word: nothing in it can be "
                                           "checked against the context."}
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
    if not content(statement):
        return {"verdict": "no", "reason": f"'{quote(statement)}' carries no content word, so it addresses "
                                           "nothing in the question."}
    if is_refusal(statement):
        if shared:
            return {"verdict": "yes", "reason": None}
        return {"verdict": "borderline", "reason": f"'{quote(statement)}' is a refusal that does not name the "
                                                   "question's topic."}
    if is_small_talk(question) and is_courtesy(statement):
        return {"verdict": "yes", "reason": None}
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

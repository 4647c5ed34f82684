"""A judge request as every stand-in answers it: the JSON schema a client sent is matched to the schema class
it was made from, among those the offline judge has a rule for, and the offline judge itself answers
(LexicalJudge.generate), so a stand-in answers exactly the requests an offline run does, with its answer
and its token counts.

A client sends a pydantic schema as JSON (OpenAI's strict json_schema, Gemini's responseSchema, Anthropic's
output format, Ollama's format), each reshaped its own way, but each keeps the titles and the property names
at every depth: those name the class (every metric names its schema `Verdicts`; the verdict's own class,
`FaithfulnessVerdict` or `FactVerdict`, tells them apart).
"""
import functools
import importlib
from typing import Any

from pydantic import BaseModel

from whichstage.offline import lexical_judge
from whichstage.offline.deepeval_prompts import UnknownRequest


def names(schema: Any) -> tuple[frozenset[str], frozenset[str]]:
    """The titles and the property names found at any depth of a JSON schema."""
    titles: set[str] = set()
    properties: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "title" and isinstance(value, str):
                    titles.add(value)
                elif key == "properties" and isinstance(value, dict):
                    properties.update(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk(schema)
    return frozenset(titles), frozenset(properties)


def schema_class(kind: tuple[str, str]) -> type[BaseModel]:
    """The schema class a lexical_judge.HANDLERS key names (the inverse of lexical_judge.request_kind):
    DeepEval's deepeval.metrics.<metric>.schema.<Name>, or the harness's own whichstage.<metric>.<Name>."""
    metric, name = kind
    for module in (f"deepeval.metrics.{metric}.schema", f"whichstage.judging.{metric}"):
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        if lexical_judge.request_kind(found) == kind:
            return found
    raise UnknownRequest(f"no schema class {name} for the lexical judge's {metric} rule")


@functools.cache
def known() -> dict[type[BaseModel], tuple[frozenset[str], frozenset[str]]]:
    """Each schema class the offline judge answers, with the names its JSON schema holds."""
    classes = [schema_class(kind) for kind in lexical_judge.HANDLERS]
    return {c: names(c.model_json_schema()) for c in classes}


def schema_named(schema: dict) -> type[BaseModel]:
    """The class a request's JSON schema was made from: the one with its property names whose titles hold its
    titles (a client may drop some). UnknownRequest when none is, or several are."""
    titles, properties = names(schema)
    fits = [c for c, (own_titles, own_properties) in known().items()
            if own_properties == properties and titles <= own_titles]
    if len(fits) == 1:
        return fits[0]
    asked = schema.get("title") or f"untitled {{{', '.join(sorted(properties))}}}"
    if not fits:
        raise UnknownRequest(f"no rule for a {asked!r} request: its schema is none the lexical judge answers")
    raise UnknownRequest(f"no rule for a {asked!r} request: its schema fits "
                         f"{', '.join('.'.join(lexical_judge.request_kind(c)) for c in fits)}")


@functools.cache
def offline_judge() -> lexical_judge.LexicalJudge:
    return lexical_judge.LexicalJudge()


def answer(prompt: str, schema: dict) -> tuple[str, int, int]:
    """The offline judge's answer to a request as JSON text, with its tokens in and out (its word counts)."""
    judge = offline_judge()
    before = judge.usage()  # per thread: what this call adds is this request's
    text = judge.generate(prompt, schema_named(schema)).model_dump_json()
    after = judge.usage()
    return text, after[0] - before[0], after[1] - before[1]

"""Reading DeepEval's prompts as the lexical judge does: the text under a labelled section, a section DeepEval
filled with a Python list, GEval's evaluation step and test-case fields, and a JSON context node as prose.
UnknownRequest when a prompt lacks what a rule reads."""
import ast
import json
import re
import threading


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


# CPython 3.11 keeps the AST constructor's recursion depth per interpreter, not per thread, so two threads
# parsing at once can fail with "SystemError: AST constructor recursion depth mismatch" (cpython#106905).
_PARSING = threading.Lock()


def as_list(text: str) -> list:
    """A section that DeepEval filled with a Python list; anything else is one item."""
    try:
        with _PARSING:
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


def score_sentence(prompt: str, header: str) -> str:
    return f"The score is {section(prompt, header, '')}"


def listed(prompt: str, header: str, end: str) -> list[str]:
    return [str(x) for x in as_list(section(prompt, header, end)) if x]


def geval_sections(prompt: str) -> dict:
    """GEval's prompt: the first evaluation step, then the test case's labelled fields in the order DeepEval
    writes them (Input, Actual Output, Retrieval Context), up to its closing instructions."""
    start = prompt.find("\nEvaluation Steps:\n")
    if start < 0:
        raise UnknownRequest("prompt has no 'Evaluation Steps:' section")
    body = prompt[start + len("\nEvaluation Steps:\n"):]
    body = body[:body.rfind("\n**\nIMPORTANT")] if "\n**\nIMPORTANT" in body else body
    fields: dict[str, str] = {"step": re.sub(r"^\d+\.\s*", "", body.split("\n", 1)[0]).strip()}
    order: list[tuple[str, int]] = []
    for label in ("Input", "Actual Output", "Retrieval Context"):
        at = body.find(f"\n{label}:\n", order[-1][1] if order else 0)
        if at >= 0:
            order.append((label, at))
    for i, (label, at) in enumerate(order):
        stop = order[i + 1][1] if i + 1 < len(order) else len(body)
        fields[label] = body[at + len(label) + 3:stop].strip()
    return fields

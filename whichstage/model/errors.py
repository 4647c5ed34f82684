"""Bad input as one line: `InputError`, and a validation error's field path (each list item named by its id)
and what was wrong. Pure, standard library (dataset.py uses `where` on a replay, which never imports pydantic)."""
from collections.abc import Mapping, Sequence
from typing import Any

from whichstage._util.exits import WhichstageError


class InputError(WhichstageError):
    """An input file that cannot be used as it is: one line naming the file and the field."""


def kind(value: object) -> str:
    """A JSON value's type as a sentence names it."""
    if value is None:
        return "null"
    for types, name in ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "a list"),
                        (dict, "an object")):
        if isinstance(value, types):
            return name
    return type(value).__name__


def one_line(case_id: str) -> str:
    """A case id as a refusal shows it: quoted when it holds a line break or another unprintable character."""
    return case_id if case_id.isprintable() else repr(case_id)


def where(data: Any, loc: tuple) -> str:
    """'cases[4] (pipe-colors).expected_docs' from pydantic's location, naming the case by its id."""
    text, node = "", data
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                text += f" ({one_line(node['id'])})"
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text or "top level"


def first_problem(data: Any, errors: Sequence[Mapping[str, Any]]) -> str:
    """The first of pydantic's errors about `data` as 'rows[0] (backup).tools.pass: missing'; a check across
    fields (error type "shape") names its field below the model in its context."""
    error = errors[0]
    if error["type"] == "shape":  # its text from the context as is: pydantic's message fills in braces
        return f"{where(data, (*error['loc'], *error['ctx']['at']))}: {error['ctx']['text']}"
    return f"{where(data, error['loc'])}: {'missing' if error['type'] == 'missing' else error['msg']}"

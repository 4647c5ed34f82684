"""The `rules` model's values for an action's arguments, from the request's detail and the whole message.

A string argument is an identifier when what the tool declares says so: its JSON schema gives a `pattern`, a
lookup is keyed by an argument of its name (book_visit(serial) beside get_device(serial)), its description
gives an example carrying a digit ('such as NN-1234') or calls it an id, number, code or reference, or its
name's words do (order_id, ticket_number). Its value is a token of the detail, else of the message: the first
the pattern matches (none: the argument is left out); else a key of the records of a lookup keyed by its
name; else the first shaped like the description's example; else the first carrying a digit,
one with a letter or '#' first preferred (ORD-1002, #212). A string named like a heading (title, subject,
summary) gets the detail's first sentence, cut to 80 characters; any other string the detail; a number the
first standalone number (of the detail, else of the message).
"""
import re
from typing import Any, Optional

from whichstage.offline.words import sentences

IDENTIFIER_WORDS = frozenset("id identifier number num no nr code key ref reference".split())
_HEADING_ARGS = frozenset("title subject summary headline name".split())
# A description calling its argument an identifier ('the serial number'), not a count ('the number of seats').
_SAYS_IDENTIFIER = re.compile(r"\b(?:ids?|identifiers?|numbers?|codes?|refs?|references?)\b(?!\s+of\b)",
                              re.IGNORECASE)
_EXAMPLE = re.compile(r"\b(?:such\s+as|e\.g\.|eg|like|for\s+(?:example|instance)|as\s+in)\s*[:,]?\s*"
                      r"['\"`]?([A-Za-z#][\w#/-]*\d[\w-]*|\d[\w-]*[A-Za-z][\w-]*)", re.IGNORECASE)
_ID_TOKEN = re.compile(r"(?<![\w.#-])(?!\d+\.\d)[A-Za-z0-9#][\w#/-]*\d[\w-]*")
_NUMBER = re.compile(r"(?<![\w.#-])\d+(?:\.\d+)?(?![\w-]|\.\d)")
_TOKEN = re.compile(r"[^\s,;:!?()\[\]{}<>\"'`]+")
TITLE_LENGTH = 80


def name_words(name: str) -> list[str]:
    """An identifier's words, lower-cased: file_bug_report -> file, bug, report; sendRefund -> send, refund."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name or "")]


def tokens(text: str) -> list[str]:
    """The text's whitespace-separated tokens, without the punctuation around them."""
    return [t.rstrip(".") for t in _TOKEN.findall(text or "") if t.rstrip(".")]


def shape(example: str) -> re.Pattern:
    """A pattern for tokens written like `example`: each run of letters or digits as any such run (AB-1234 ->
    letters, '-', digits)."""
    parts = re.findall(r"[A-Za-z]+|\d+|.", example)
    return re.compile("".join("[A-Za-z]+" if p.isalpha() else r"\d+" if p.isdigit() else re.escape(p)
                              for p in parts), re.IGNORECASE)


def mentioned(text: str, keys: list[str]) -> list[str]:
    """The record keys the text names as whole words, in the order it names them."""
    found = sorted((m.start(), key) for key in keys
                   for m in [re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text or "", re.IGNORECASE)] if m)
    return [key for _, key in found]


def keyed_by(name: str, tools: dict[str, dict]) -> list[dict]:
    """The lookups whose key argument is called `name`."""
    return [t for t in tools.values() if t.get("role") == "lookup" and t.get("key") == name]


def identifier_like(name: str, schema: dict, tools: dict[str, dict]) -> bool:
    """Does what the tools declare make this string argument an identifier (see the module docstring)?"""
    description = str(schema.get("description") or "")
    return bool(schema.get("pattern") or keyed_by(name, tools) or _EXAMPLE.search(description)
                or _SAYS_IDENTIFIER.search(description) or set(name_words(name)) & IDENTIFIER_WORDS)


def identifier(name: str, schema: dict, texts: list[str], tools: dict[str, dict]) -> Optional[str]:
    """An identifier argument's value from the texts, in order (see the module docstring); None when none fits."""
    said = [t for text in texts for t in tokens(text)]
    pattern = schema.get("pattern")
    if pattern:
        try:
            return next((t for t in said if re.search(pattern, t)), None)
        except re.error:  # a pattern Python cannot read (JSON Schema's are ECMA-262): the other rules decide
            pass
    keys = [str(k) for lookup in keyed_by(name, tools) for k in lookup.get("keys", [])]
    for text in texts:
        found = mentioned(text, keys)
        if found:
            return found[0]
    example = _EXAMPLE.search(str(schema.get("description") or ""))
    if example:
        written = shape(example.group(1))
        like = next((t for t in said if written.fullmatch(t)), None)
        if like:
            return like
    found = [t for text in texts for t in _ID_TOKEN.findall(text)]
    return next((t for t in found if re.search(r"[A-Za-z#]", t)), found[0] if found else None)


def shortened(text: str) -> str:
    """The text's first sentence, cut at a word to TITLE_LENGTH characters."""
    first = (sentences(text) or [text])[0].strip()
    if len(first) <= TITLE_LENGTH:
        return first.rstrip(".")
    return first[:TITLE_LENGTH].rsplit(" ", 1)[0]


def argument(name: str, kind: Optional[str], schema: dict, about: str, message: str,
             tools: dict[str, dict]) -> Any:
    """One argument's value from the request's detail `about` and the whole message; None when none fits."""
    if kind in ("integer", "number"):
        found = _NUMBER.search(about) or _NUMBER.search(message)
        return None if found is None else (int(float(found.group(0))) if kind == "integer" else float(found.group(0)))
    if kind not in ("string", None):
        return None
    if identifier_like(name, schema, tools):
        return identifier(name, schema, [about, message], tools)
    return shortened(about) if set(name_words(name)) & _HEADING_ARGS else about

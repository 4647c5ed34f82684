"""JSON text read exactly as json reads it, by orjson where orjson reads it the same (a recording's entries are
read with orjson once a stamp vouches for them: whichstage/recording/__init__.py), and json's encoder with fixed
options."""
import json
import re
import sys
from typing import Any, Callable, Optional

import orjson


def encoder(sort_keys: bool = False, ensure_ascii: bool = True,
            default: Optional[Callable[[Any], Any]] = None) -> Callable[[Any], str]:
    """json.dumps(value, sort_keys=..., ensure_ascii=..., default=...) as one function."""
    return json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=default).encode


SHALLOW = 400  # brackets a text orjson reads may hold: nested no deeper than Python recurses
WIDE = b"0" * 19  # a run of 19 digits: maybe an integer beyond 64 bits, which orjson reads as a float
# A text's bytes as the two checks read them, in one pass: each digit as "0", each opening bracket as "[", any
# other byte a space.
SHAPE = bytes(48 if chr(c).isdigit() else 91 if chr(c) in "[{" else 32 for c in range(256))


def loads(text: str) -> Any:
    """json.loads, quicker: orjson reads a text it reads as json does, one that cannot nest deeper than Python
    recurses and holds no run of 19 digits (maybe an integer beyond 64 bits, which orjson reads as a float);
    json reads the rest (and what orjson refuses: NaN, lone surrogates) and raises as json.loads does."""
    return parsed(text)[0]


def parsed(text: str) -> tuple[Any, bool]:
    """loads(text), and whether orjson read it (then orjson reads these very bytes as json does, every time)."""
    shape = text.encode("utf-8", "surrogatepass").translate(SHAPE) if isinstance(text, str) else None
    if shape is not None and shape.count(b"[") <= SHALLOW and WIDE not in shape:
        try:
            return orjson.loads(text), True
        except orjson.JSONDecodeError:
            pass
    return json.loads(text), False


def long_integer(text: str) -> Optional[str]:
    """Where and why a parser raised ValueError reading `text` when it holds an integer of more digits than
    Python converts (sys.get_int_max_str_digits): 'line 3 column 14: an integer of 5000 digits (...)'; else None."""
    limit = sys.get_int_max_str_digits()
    integer = re.compile(r'"(?:[^"\\\n]|\\.)*"|(?<![\w.+-])-?(\d{%d,})(?![\w.])' % (limit + 1))
    found = next((m for m in integer.finditer(text) if m.group(1)), None) if limit else None
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - text.rfind("\n", 0, found.start())
    return f"line {line} column {column}: an integer of {len(found.group(1))} digits (at most {limit} are read)"

"""json.dumps's text, quicker for many small values: json's own C encoder, which json.dumps builds anew on
every call, built once."""
import json
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii
from typing import Any, Callable, Optional


def _unencodable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encoder(sort_keys: bool = False, ensure_ascii: bool = True,
            default: Optional[Callable[[Any], Any]] = None) -> Callable[[Any], str]:
    """json.JSONEncoder(sort_keys=..., ensure_ascii=..., default=...).encode, text for text, without its check
    for a value that holds itself (a parsed JSON value never does)."""
    strings = encode_basestring_ascii if ensure_ascii else encode_basestring
    try:
        chunks = c_make_encoder(None, default or _unencodable, strings, None, ": ", ", ", sort_keys, False, True)
    except TypeError:  # no C accelerator, or another signature: the same text through json's own encoder
        return json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=default).encode

    def encode(value: Any) -> str:
        return strings(value) if type(value) is str else "".join(chunks(value, 0))
    return encode

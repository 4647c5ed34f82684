"""Content hashes: what every entry's dependencies, a report's key and a criterion's definition are keyed by."""
import hashlib

from whichstage._util import jsontext as json_text

_SORTED = json_text.encoder(sort_keys=True)  # json.dumps(value, sort_keys=True)


def sha(value) -> str:
    """Content hash of any JSON value: the first 12 hex digits of the SHA-256 of json.dumps(value,
    sort_keys=True)."""
    return hashlib.sha256(_SORTED(value).encode()).hexdigest()[:12]

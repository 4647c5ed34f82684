"""The stamp of a recording whose every entry passed the shape check: a file holding the SHA-256 of its very text,
the check's version and the reader's, so the next run that reads the same bytes need not check them again."""
import hashlib
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import orjson

from whichstage import json_text
from whichstage.cassette.files import write_atomic


def code_of(module: ModuleType) -> str:
    """A hash of a module's source file: the version of a check it defines."""
    return hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]


@cache
def reader_version() -> str:
    """What reading an entry depends on besides its text: this package's files, whichstage/json_text.py (which
    decides between orjson and json), orjson's version and Python's."""
    sources = b"".join(p.read_bytes() for p in sorted(Path(__file__).parent.glob("*.py")))
    sources += Path(json_text.__file__).read_bytes()
    return hashlib.sha256(sources + f"{orjson.__version__} {sys.version}".encode()).hexdigest()[:16]


def text_digest(text: str) -> str:
    """The SHA-256 of a text's UTF-8, a megabyte at a time: of a recording's text as read_lines hashes it."""
    digest = hashlib.sha256()
    for start in range(0, len(text), 1 << 20):
        digest.update(text[start:start + (1 << 20)].encode())
    return digest.hexdigest()


class Stamp:
    """The stamp file `path` of a recording checked by the check of version `checked_by` (say code_of its module)."""

    def __init__(self, checked_by: str, path: Path):
        self.checked_by, self.path = checked_by, Path(path)

    def _text(self, digest: str) -> str:
        return f"{reader_version()} {self.checked_by} {digest}\n"

    def holds(self, digest: str) -> bool:
        """Whether a text of this digest passed this check, read by this reader, before."""
        try:
            return self.path.read_text(encoding="utf-8") == self._text(digest)
        except (OSError, UnicodeDecodeError):
            return False

    def write(self, digest: str) -> None:
        """Stamp a text of this digest as checked; a stamp that cannot be written costs the next run its checks."""
        try:
            write_atomic(self.path, self._text(digest))
        except OSError:
            pass

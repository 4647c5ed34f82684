"""Files as the user sees them: a path shown as typed, a JSON file read with a one-line error, a file written
whole or not at all, and a stdout that prints what its encoding cannot hold."""
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from whichstage._util import jsontext as json_text
from whichstage._util.exits import WhichstageError


class RecordingError(WhichstageError):
    """A recording that cannot be replayed: missing, unreadable, stale, or without the requested entry."""


def shown(path: Path) -> str:
    """A path as the user typed it: relative to the working folder when it is inside it."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_json(path: Path, error: type[Exception] = RecordingError, label: Optional[str] = None) -> Any:
    """Parse a JSON file (UTF-8, a byte-order mark allowed); a missing, unreadable, malformed or absurdly
    nested one raises `error` with one line that names the file (as `label`, or as typed) and the spot."""
    label, text = label or shown(path), ""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        return json.loads(text)
    except FileNotFoundError:
        raise error(f"{label}: file not found") from None
    except json.JSONDecodeError as e:
        raise error(f"{label}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise error(f"{label}: nested too deeply to read") from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"{label}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    except ValueError as e:  # an integer longer than Python converts
        raise error(f"{label}: {json_text.long_integer(text) or e}") from None


def printable_stdout() -> None:
    """Print what stdout's encoding cannot hold (a latin-1 or ASCII locale) as '?' instead of crashing."""
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")


def write_atomic(path: Path, text: Union[str, Iterable[str]]) -> None:
    """Write UTF-8 (a str, or its pieces one after another, so a large report is never held whole) through a
    temp file in the same folder and rename it into place: never a torn file. Any failure (unwritable
    folder, full disk, a signal) raises and leaves no temp file behind; once the rename is done the file is
    written, whatever arrives after."""
    path, tmp = Path(path), None
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for piece in [text] if isinstance(text, str) else text:
                f.write(piece)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a recording is meant to be read and committed
        os.replace(tmp, path)
        tmp = None
    except BaseException as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            e.filename = str(path)  # the file asked for, not the temp file beside it
        raise

"""A recording of paid calls, keyed by everything they depend on; a replay refuses any other key.

`Cassette(path, key, live)`: in replay, `get(entry, compute)` returns what was recorded and never calls
`compute`; in live mode it calls `compute` and records the result. `save()` writes atomically.
"""
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


class RecordingError(Exception):
    """A recording that cannot be replayed: missing, unreadable, stale, or without the requested entry."""


def key_changes(recorded: dict, current: dict) -> list[str]:
    """Fields whose value differs, including fields only one side has, in a stable order."""
    fields = list(current) + [f for f in recorded if f not in current]
    return [f for f in fields if recorded.get(f, _ABSENT) != current.get(f, _ABSENT)]


_ABSENT = object()


def read_json(path: Path) -> Any:
    """Parse a JSON file, turning a malformed one into a one-line error that names the file and the spot."""
    try:
        return json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise RecordingError(f"{shown(path)}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def write_atomic(path: Path, text: str) -> None:
    """Write through a temp file in the same folder and rename it into place: never a torn file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a recording is meant to be read and committed
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def shown(path: Path) -> str:
    """A path as the user typed it: relative to the working folder when it is inside it."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class Cassette:
    def __init__(self, path: Path, key: dict, live: bool):
        self.path, self.key, self.live = Path(path), dict(key), live
        self.entries: dict[str, Any] = {}
        if live:
            return
        if not self.path.exists():
            raise RecordingError(f"{shown(self.path)}: no recording; record one with --live")
        data = read_json(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("key"), dict) or "entries" not in data:
            raise RecordingError(f"{shown(self.path)}: not a recording (expected 'key' and 'entries')")
        changed = key_changes(data["key"], self.key)
        if changed:
            raise RecordingError(f"{shown(self.path)}: recording is stale: "
                                 + ", ".join(f"{f} changed" for f in changed) + "; record again with --live")
        self.entries = data["entries"]

    def get(self, entry: str, compute: Callable[[], Any]) -> Any:
        """The recorded value of `entry`; in live mode, compute and record it."""
        if entry in self.entries:
            return self.entries[entry]
        if not self.live:
            raise RecordingError(f"{shown(self.path)}: no entry {entry!r} in the recording; record again with --live")
        # Stored as it will read back, so a live report and its replay see the same values.
        self.entries[entry] = json.loads(json.dumps(compute()))
        return self.entries[entry]

    def dumps(self) -> str:
        """Entries sorted by name, so the file does not depend on the order calls completed in."""
        return json.dumps({"key": self.key, "entries": dict(sorted(self.entries.items()))}, indent=2) + "\n"

    def save(self) -> None:
        write_atomic(self.path, self.dumps())

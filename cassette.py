"""A recording of paid calls, keyed by everything they depend on; a replay refuses any other key.

`Cassette(path, key, live)`: in replay, `get(entry, compute)` returns what was recorded and never calls
`compute`; in live mode it returns what is already recorded under the same key and computes only what is
missing. Each computed entry reaches disk at once, as its own atomically written file in a journal folder
beside the recording, so an interrupted run keeps everything it paid for; `save()` folds the journal into
the recording (atomically) and removes it.
"""
import hashlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Optional


class RecordingError(Exception):
    """A recording that cannot be replayed: missing, unreadable, stale, or without the requested entry."""


_ABSENT = object()


def key_changes(recorded: dict, current: dict) -> list[str]:
    """Fields whose value differs, including fields only one side has, in a stable order."""
    fields = list(current) + [f for f in recorded if f not in current]
    return [f for f in fields if recorded.get(f, _ABSENT) != current.get(f, _ABSENT)]


def shown(path: Path) -> str:
    """A path as the user typed it: relative to the working folder when it is inside it."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_json(path: Path, error: type[Exception] = RecordingError, label: Optional[str] = None) -> Any:
    """Parse a JSON file; a missing, unreadable or malformed one raises `error` with one line that names the
    file (as `label`, or as the user would type it) and the spot."""
    label = label or shown(path)
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{label}: file not found") from None
    except json.JSONDecodeError as e:
        raise error(f"{label}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"{label}: cannot read: {getattr(e, 'strerror', None) or e}") from None


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


def read_recording(path: Path) -> dict:
    if not Path(path).exists():
        raise RecordingError(f"{shown(path)}: no recording; record one with --live")
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("key"), dict) or not isinstance(data.get("entries"), dict):
        raise RecordingError(f"{shown(path)}: not a recording (expected 'key' and 'entries')")
    return data


class Cassette:
    def __init__(self, path: Path, key: dict, live: bool, rerecord: bool = False):
        self.path, self.key, self.live = Path(path), dict(key), live
        self.journal = self.path.with_name(f".{self.path.stem}.partial")
        self.entries: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.notes: list[str] = []  # what live mode kept or dropped, for the user
        self.rerecord = rerecord
        if not live:
            data = read_recording(self.path)
            changed = key_changes(data["key"], self.key)
            if changed:
                raise RecordingError(f"{shown(self.path)}: recording is stale: "
                                     + ", ".join(f"{f} changed" for f in changed) + "; record again with --live")
            self.entries = data["entries"]
        elif rerecord:
            shutil.rmtree(self.journal, ignore_errors=True)
        else:
            self._resume()

    def _resume(self) -> None:
        """Keep the entries already paid for under this same key: the journal's, and the recording's
        unless the journal belongs to a --rerecord, which must not be topped up with the old entries."""
        journal = self._read_journal()
        if journal is not None and journal["meta"]["rerecord"]:
            self.rerecord = True
        elif self.path.exists():
            try:
                data = read_recording(self.path)
            except RecordingError as e:
                self.notes.append(f"ignoring {e}")
            else:
                changed = key_changes(data["key"], self.key)
                if changed:
                    self.notes.append(f"{shown(self.path)} was recorded with other inputs "
                                      f"({', '.join(changed)} changed): recording every entry again")
                else:
                    self.entries.update(data["entries"])
        if journal is not None:
            self.entries.update(journal["entries"])
        if self.entries:
            self.notes.append(f"resuming: {len(self.entries)} entries already recorded are kept "
                              "(--rerecord to start over)")

    def _read_journal(self):
        """The journal's entries and meta when it was written under this key; a stale one is removed."""
        if not self.journal.exists():
            return None
        meta_file = self.journal / "key.json"
        meta = read_json(meta_file) if meta_file.exists() else None
        if not meta or meta.get("key") != self.key:
            self.notes.append(f"dropping {shown(self.journal)}: it was recorded with other inputs")
            shutil.rmtree(self.journal)
            return None
        entries = {}
        for file in sorted(self.journal.glob("entry-*.json")):
            item = read_json(file)
            entries[item["entry"]] = item["value"]
        return {"meta": meta, "entries": entries}

    def has(self, entry: str) -> bool:
        with self.lock:
            return entry in self.entries

    def get(self, entry: str, compute: Callable[[], Any]) -> Any:
        """The recorded value of `entry`; in live mode, compute, record and journal it."""
        with self.lock:
            if entry in self.entries:
                return self.entries[entry]
        if not self.live:
            raise RecordingError(f"{shown(self.path)}: no entry {entry!r} in the recording; record again with --live")
        # Stored as it will read back, so a live report and its replay see the same values.
        value = json.loads(json.dumps(compute()))
        self._journal(entry, value)
        with self.lock:
            self.entries[entry] = value
        return value

    def _journal(self, entry: str, value: Any) -> None:
        with self.lock:
            if not (self.journal / "key.json").exists():
                meta = {"key": self.key, "rerecord": self.rerecord}
                write_atomic(self.journal / "key.json", json.dumps(meta, indent=2) + "\n")
        name = hashlib.sha256(entry.encode()).hexdigest()[:20]
        write_atomic(self.journal / f"entry-{name}.json", json.dumps({"entry": entry, "value": value}) + "\n")

    def dumps(self) -> str:
        """Entries sorted by name, so the file does not depend on the order calls completed in."""
        with self.lock:
            entries = dict(sorted(self.entries.items()))
        return json.dumps({"key": self.key, "entries": entries}, indent=2) + "\n"

    def save(self) -> None:
        """Write the whole recording atomically, then drop the journal it now contains."""
        write_atomic(self.path, self.dumps())
        shutil.rmtree(self.journal, ignore_errors=True)

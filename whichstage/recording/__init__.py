"""The recording of paid calls ("cassette"), in which every entry carries the hashes of exactly what it read: files
(paths, atomic writes, JSON read), format (the line-per-entry file), journal (what a live run paid for, as it
goes), lock (one writer at a time), store (lookup and save: `Cassette`, `Mode`), requests (the requests a live
run's calls sent, kept beside the entries and served instead of paid again; loaded by a live run only).
The names below are this package's public ones; `hold` is in `lock` (it loads portalocker, which a replay
need not)."""
from typing import Any

from whichstage._util.files import RecordingError, printable_stdout, read_json, shown, write_atomic
from whichstage.recording.format import dumps_recording, entry_count, read_key, read_recording
from whichstage.recording.journal import read_journal
from whichstage.recording.store import ABSENT, Cassette, Mode, Stale, parts_changed

__all__ = ["ABSENT", "Cassette", "Mode", "RecordingError", "Stale", "dumps_recording", "entry_count", "parts_changed",
           "printable_stdout", "read_journal", "read_json", "read_key", "read_recording", "shown", "write_atomic"]


def __getattr__(name: str) -> Any:
    """`hold`, loaded when asked for (a replay takes no lock)."""
    if name == "hold":
        from whichstage.recording.lock import hold

        return hold
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Lookup and save: `Cassette(path, header, mode)` gives an entry's recorded value while the hashes of what it
read are the same now, computes (and journals) a missing or stale one in a live run, and saves the entries
the run used."""
import threading
from enum import Enum
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Optional, cast

import whichstage.recording.journal as journal
from whichstage._util.files import RecordingError, shown, write_atomic
from whichstage.recording.format import (FORMAT, Check, dump_entry, dumps_recording, entry_count, parse_item,
                                         read_recording, shown_name)

if TYPE_CHECKING:
    from whichstage.recording.requests import Requests


class Mode(Enum):
    """How a run treats its recording."""
    REPLAY = "replay"  # reads it only: an entry missing or stale is refused (Stale)
    LIVE = "live"  # computes what is missing or stale, journals it, and saves
    RERECORD = "rerecord"  # computes every entry again: none of the file's is used

    @classmethod
    def of(cls, live: bool, rerecord: bool = False) -> "Mode":
        """The mode the command-line flags --live and --rerecord ask for."""
        return cls.REPLAY if not live else cls.RERECORD if rerecord else cls.LIVE


class Stale(Exception):
    """An entry the recording lacks, or recorded under other dependencies; `reasons` says which."""

    def __init__(self, entry: str, reasons: list[str]):
        super().__init__(f"{entry}: {', '.join(reasons)}")
        self.entry, self.reasons = entry, reasons


ABSENT = object()  # what lookup returns for an entry with no current value


def key_changes(recorded: dict, current: dict) -> list[str]:
    """Fields whose value differs, including fields only one side has, in a stable order."""
    if recorded == current:
        return []
    fields = list(current) + [f for f in recorded if f not in current]
    return [f for f in fields if recorded.get(f, ABSENT) != current.get(f, ABSENT)]


def shared(value: Any, seen: dict[str, str]) -> Any:
    """The value with each string at its top (a list's items, an object's values) kept once in `seen`, so rows
    built from thousands of entries hold one copy of each page id, name or repeated reason."""
    if type(value) is list:
        return [seen.setdefault(v, v) if type(v) is str else v for v in value]
    if type(value) is dict:
        for key, v in value.items():
            if type(v) is str:
                value[key] = seen.setdefault(v, v)
    return value


def parts_changed(old: dict[str, str], new: dict[str, str], shown_parts: int = 3) -> str:
    """Which parts changed between two indexes (hash by id): 'faq edited, setup added, old removed, and 2 more'."""
    named = [f"{shown_name(p)} {'edited' if p in old else 'added'}" for p, h in new.items() if old.get(p) != h]
    named += [f"{shown_name(p)} removed" for p in old if p not in new]
    more = f", and {len(named) - shown_parts:,} more" if len(named) > shown_parts else ""
    return ", ".join(named[:shown_parts]) + more if named else "the same ones, in another order"


class Cassette:
    """A recording in which every entry carries the hashes of exactly what it read (its `deps`)."""

    def __init__(self, path: Path, header: dict, mode: Mode = Mode.REPLAY, check: Optional[Check] = None,
                 predict: Optional[Callable[[str], Any]] = None, also: Optional[tuple[Path, dict]] = None):
        """`check(entry, value)` says what is wrong with a recorded value: each entry is checked as it is
        read. `predict` makes a dry live run (a plan): nothing is computed, locked or written; a missing entry
        is noted in `planned` with why, and `predict(entry)` stands in for its value. `also` is (path, header)
        of another recording whose entries this one may reuse, read only (a shard reads the project's)."""
        self.path, self.mode, self.check, self.predict = Path(path), mode, check, predict
        self.key = {"format": FORMAT, **header}
        self.journal = journal.journal_of(self.path)
        # The file's entries (each as its JSON text until looked up, when read_lines could keep it so), then
        # the journal's, by name; and those current in this run, what save() writes.
        self.recorded: dict[str, Any] = {}
        self.used: dict[str, Any] = {}
        self.on_disk: dict[str, Any] = {}  # the file's entries, each as its text until looked up
        self.lined = False  # the file's entries are all texts (read_lines), never objects
        self.computed = 0
        self.indexed = 0  # indexes (index) this run wrote anew: no call made, nothing kept either
        self.planned: list[tuple[str, list[str]]] = []
        self.notes: list[str] = []  # what a live run kept, set aside or dropped, for the user
        self.seen: dict[str, str] = {}  # one copy of each string at the top of the values parsed (shared)
        self.indexes: dict[str, Callable[[], dict[str, str]]] = {}  # field -> the hash of each of its parts now
        self.explained: dict[tuple[str, Any], str] = {}  # (field, its recorded hash) -> why, once each
        self.lock = threading.Lock()
        self.held: Optional[IO[str]] = None  # the open lock file of a live run
        self.ended = False  # the run has returned: a call still running journals nothing (end())
        self.requests: Optional["Requests"] = None  # a live run's requests (cassette/requests.py); a plan sends none
        if mode is Mode.REPLAY:
            self._open_replay()
        else:
            self._open_live(also)

    def _open_replay(self) -> None:
        """A replay reads the recording alone, and refuses it when recorded under another key."""
        data = read_recording(self.path, self.check, lazy=True)
        changed = key_changes(data["key"], self.key)
        if changed:
            raise RecordingError(f"{shown(self.path)}: recording is stale: "
                                 + ", ".join(f"{f} changed" for f in changed) + "; record again with --live")
        self.recorded = data["entries"]

    def _open_live(self, also: Optional[tuple[Path, dict]]) -> None:
        """A live run takes the recording's lock (a plan does not), then starts from what was paid for."""
        if self.predict is None:
            from whichstage.recording.lock import hold  # portalocker: a replay takes no lock, and need not load it

            self.held = hold(self.path)
        try:
            self._resume()
            if also is not None and self.mode is Mode.LIVE:
                self._reuse(*also)
        except BaseException:
            self.close()
            raise

    @property
    def live(self) -> bool:
        """Whether this run computes what the recording lacks (LIVE or RERECORD)."""
        return self.mode is not Mode.REPLAY

    def _reuse(self, path: Path, header: dict) -> None:
        """Entries of another recording of the same case set and models, where this one lacks them: its file's,
        and those its journal holds (an interrupted or incomplete run of it), read only. A shard is served the
        project's recorded requests too (a second judge's run sends none of the first's)."""
        key = {"format": FORMAT, **header}
        found = {}
        if Path(path).exists():
            data = read_recording(path, self.check)
            if not key_changes(data["key"], key):
                found.update(data["entries"])
                if "shard" in self.key and self.requests is not None:
                    for request, item in (data.get("requests") or {}).items():
                        self.requests.recorded.setdefault(request, item)
        kept = journal.usable(journal.journal_of(path), key, self.check)  # what it paid for and did not write
        if kept is not None:
            found.update(kept["entries"])
        for name, item in found.items():
            self.recorded.setdefault(name, item)

    def end(self) -> int:
        """The run is over: a call still running journals nothing after this, as a process that exits cuts it
        off, so what the run says it kept is what the journal holds; the entries this run journaled."""
        with self.lock:
            self.ended = True
            return self.computed

    def close(self) -> None:
        """End the run (end) and release the live run's lock (also on save); safe to call twice."""
        self.end()
        if self.held is not None:
            self.held.close()
            self.held = None

    def _resume(self) -> None:
        """Start from the entries already paid for: the recording's and an interrupted run's journal; RERECORD
        starts from none, and resuming an interrupted --rerecord from its journal's alone. Which of them are
        still current is decided entry by entry, in `get`."""
        if self.predict is None:
            found = journal.resume(self.journal, self.key, self.check, self.notes)
        else:
            found = journal.usable(self.journal, self.key, self.check)
        if self.mode is Mode.RERECORD:
            n = len(found["entries"]) if found else 0
            dropped = f"; the {entry_count(n)} {journal.left_by(found)} kept {'is' if n == 1 else 'are'} dropped" \
                if found else ""
            self.notes.append(f"--rerecord: calling the models for every entry again{dropped}")
            if found is not None and self.predict is None:
                self.journal.unlink()  # --rerecord starts over, even after an interrupted run
            found = None
        elif found is not None and found["rerecord"]:
            self.mode = Mode.RERECORD  # a --rerecord that was interrupted must not be topped up from the old file
        data = self._read_for_live()
        if data is not None:
            self.on_disk, self.lined = data["entries"], data.get("lined", False)
            if self.mode is Mode.LIVE:
                self.recorded.update(data["entries"])
        if self.predict is None:
            from whichstage.recording.requests import Requests  # a live run's: a replay need not load it

            self.requests = Requests((data or {}).get("requests") or {}, dict(found["requests"]) if found else {},
                                     self.mode is Mode.LIVE, self._journal_line)
        if found is not None:
            # What the journal adds to the recording: all of it for an interrupted --rerecord, which does not
            # use the file's entries; else what the file lacks (a run killed after saving holds nothing new).
            kept = [e for e, item in found["entries"].items()
                    if self.mode is Mode.RERECORD or self.disk_item(e) != item]
            self.recorded.update({e: found["entries"][e] for e in kept})  # the others: the file has them
            if kept:
                rest = "; the rest of its --rerecord is called again" if self.mode is Mode.RERECORD else ""
                self.notes.append(f"resuming: {entry_count(len(kept))} from {journal.left_by(found)} "
                                  f"{'is' if len(kept) == 1 else 'are'} kept (in {shown(self.journal)}){rest}")

    def _read_for_live(self) -> Optional[dict]:
        """The recording a live run starts from, or None. One that cannot be read is never replaced unless
        --rerecord says so (that would pay for every entry again); one of another key never."""
        if not self.path.exists():
            return None
        try:
            data = read_recording(self.path, self.check, lazy=True, requests=self.predict is None)
        except RecordingError as e:
            if self.mode is not Mode.RERECORD:
                raise RecordingError(f"{e}; it is not replaced (recording it again would pay for every "
                                     "entry): fix or move it, or start over deliberately with --rerecord") from None
            self.notes.append(f"--rerecord: replacing {shown(self.path)}, which cannot be read")
            return None
        changed = key_changes(data["key"], self.key)
        if changed:  # another case set or other models (their names map to this file): never replaced
            raise RecordingError(f"{shown(self.path)}: holds the recording of " + ", ".join(
                f"{f} {data['key'].get(f)!r}" for f in changed) + ", not " + ", ".join(
                f"{f} {self.key.get(f)!r}" for f in changed) + "; it is not replaced: move it aside")
        return data

    def incomplete(self, why: str) -> None:
        """Note beside the journal that this run ended incomplete (`why`, say '2 cases errored'), not
        interrupted, so the next run says so when it resumes from it. Nothing when there is no journal."""
        with self.lock:
            if self.predict is None:
                journal.incomplete(self.journal, why)

    def _parse(self, entry: str, text: str) -> dict:
        """A file's entry kept as text, parsed and checked (parse_item)."""
        return parse_item(self.path, entry, text, self.check)

    def disk_item(self, entry: str) -> Optional[dict]:
        """The file's entry, parsed (None when the file lacks it)."""
        item = self.on_disk.get(entry)
        return self._parse(entry, item) if isinstance(item, str) else item

    def has(self, entry: str) -> bool:
        """Whether this run has a current value for `entry` (recorded, or computed now)."""
        with self.lock:
            return entry in self.used

    def lookup(self, entry: str, deps_of: Callable[[Any], dict]) -> tuple[Any, list[str]]:
        """The recorded value when its dependencies are current, else (ABSENT, what changed)."""
        if self.mode is Mode.REPLAY:  # a replay uses none and runs in one thread: one lookup, no lock
            stored, known = self.recorded.get(entry), False
        else:
            with self.lock:
                stored = self.used.get(entry)
                known = stored is not None
                if not known:
                    stored = self.recorded.get(entry)
        if stored is None:
            return ABSENT, ["not recorded"]
        item = stored
        if isinstance(stored, str):
            item = self._parse(entry, stored)
            item["value"] = shared(item["value"], self.seen)
        if known:
            return item["value"], []
        changed = key_changes(item["deps"], deps_of(item["value"]))
        if changed:
            return ABSENT, [self._changed(field, item["deps"].get(field)) for field in changed]
        if self.live:  # a replay keeps nothing it has looked up: its rows hold what they need
            with self.lock:
                self.used[entry] = stored  # as the file holds it, when it does: text until it is written
        return item["value"], []

    def index(self, field: str, whole: str, parts: Callable[[], dict[str, str]]) -> None:
        """Keep beside the entries, as the entry `index/<field>`, the hash of each part of the dependency `field`
        (each page's, for `pages`) whose hash of them all is `whole`: a later run in which `field` changed then
        names the parts that did (parts_changed). A live run writes it; a replay and a plan only read it."""
        self.indexes[field] = cache(parts)
        name, deps = f"index/{field}", {field: whole}
        if self.lookup(name, lambda value: deps)[0] is ABSENT and self.live and self.predict is None:
            with self.lock:
                self.used[name] = {"deps": deps, "value": self.indexes[field]()}
                self.indexed += 1

    def _changed(self, field: str, recorded: Any) -> str:
        """Why an entry that read `field` is stale: '<field> changed', naming its parts that changed when the
        recording's index of them is of the very value the entry read."""
        if field not in self.indexes:
            return f"{field} changed"
        said = self.explained.get((field, recorded))
        if said is None:
            said, old = f"{field} changed", self._indexed(field)
            if old is not None and old["deps"].get(field) == recorded:
                said += f" ({parts_changed(old['value'], self.indexes[field]())})"
            self.explained[(field, recorded)] = said
        return said

    def _indexed(self, field: str) -> Optional[dict]:
        """The recording's index of `field` (index), as the file or the journal holds it, or None."""
        stored = self.recorded.get(f"index/{field}")
        return self._parse(f"index/{field}", stored) if isinstance(stored, str) else stored

    def get(self, entry: str, deps_of: Callable[[Any], dict], compute: Optional[Callable[[], Any]] = None) -> Any:
        """The current value of `entry`; in a live run a missing or stale one is computed and journaled."""
        value, why = self.lookup(entry, deps_of)
        if value is not ABSENT:
            return value
        if self.mode is Mode.REPLAY:
            raise Stale(entry, why)
        if self.predict is not None:  # a plan: say what would be called, and go on with a stand-in value
            value = dump_entry(self.predict(entry))
            with self.lock:
                self.planned.append((entry, why))
                self.used[entry] = {"deps": {}, "value": value}
            return value
        # A live run's callers pass `compute`; only a replay (Stale above) or a plan (predict) reads without.
        run = cast(Callable[[], Any], compute)
        if self.requests is None:
            value = dump_entry(run())
        else:
            with self.requests.serving(entry):
                value = dump_entry(run())
        item = {"deps": dump_entry(deps_of(value)), "value": value}
        with self.lock:
            if self.ended:
                return value
            journal.append(self.journal, self._header(), entry, item)
            self.used[entry] = self.recorded[entry] = item
            self.computed += 1
        return value

    def _header(self) -> dict:
        return {"key": self.key, "rerecord": self.mode is Mode.RERECORD}

    def _journal_line(self, line: dict) -> None:
        """A request answered, or forgotten, journaled as soon as it is (cassette/requests.py)."""
        with self.lock:
            if not self.ended:
                journal.append_line(self.journal, self._header(), line)

    def dumps(self) -> str:
        """Entries sorted by name, so the file does not depend on the order calls completed in; then the
        requests any of them used, sorted by key."""
        with self.lock:
            entries = dict(sorted(self.used.items()))
        requests = self.requests.to_write(set(entries)) if self.requests is not None else None
        return dumps_recording(self.key, entries, requests)

    def unchanged(self) -> bool:
        """True when the entries this run used are exactly the ones the file holds, and no request was answered."""
        if self.requests is not None and (self.requests.answers or self.requests.tags):
            return False
        with self.lock:  # the very objects the file's entries were read as: equal in C first (a text in used
            # is always the file's own), then, for a file read as objects, each value by identity (a
            # recomputed one may be equal)
            return self.path.exists() and self.used == self.on_disk and (self.lined or all(
                item is self.on_disk[entry] for entry, item in self.used.items()))

    def save(self, keep: Optional[Callable[[str], bool]] = None) -> bool:
        """Write the recording atomically unless it would not change, then drop the journal. `keep(entry)`
        names entries of the file this run did not use that stay (a run of some cases keeps the others').
        Returns whether the file was written."""
        if keep is not None:
            with self.lock:
                for name, item in self.on_disk.items():
                    if name not in self.used and keep(name):
                        self.used[name] = item
        written = not self.unchanged()
        if written:
            write_atomic(self.path, self.dumps())
        self.journal.unlink(missing_ok=True)
        self.close()
        return written

    def reused(self) -> int:
        """Entries this run used that an earlier run paid for: neither computed now nor an index written anew."""
        with self.lock:
            return len(self.used) - self.computed - self.indexed

    def dropped(self) -> int:
        """Entries the file held that this run did not use: stale ones, and those of removed cases."""
        with self.lock:
            return 0 if self.on_disk.keys() <= self.used.keys() else len(self.on_disk.keys() - self.used.keys())

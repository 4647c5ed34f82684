"""A recording of paid calls in which every entry carries the hashes of exactly what it depends on.

`Cassette(path, header, live)`: `get(entry, deps_of, compute)` returns the recorded value when the entry's
recorded dependencies equal `deps_of(value)` now; in replay anything else raises `Stale`, naming what
changed, and `compute` is never called; in live mode only a missing or stale entry is computed. Each
computed entry is appended at once to a journal beside the recording (one JSON line each, so an
interrupted run keeps everything it paid for); `save()` writes the entries this run used, atomically,
and writes nothing when they are exactly what the file already holds. Each entry is checked as it is read;
a file whose very text passed every check once is read unchecked, as long as its stamp (the SHA-256 of that
text, the check's code and this reader's) says so. `index(field, ...)` keeps beside the entries the hash of
each part of a dependency (each page of `pages`), so that an entry stale because it changed names the parts
that did.
"""
import hashlib
import json
import os
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

import orjson

from whichstage import json_text

FORMAT = 2  # entries with their own dependencies; format 1 had one key for the whole file


class RecordingError(Exception):
    """A recording that cannot be replayed: missing, unreadable, stale, or without the requested entry."""


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


def shown(path: Path) -> str:
    """A path as the user typed it: relative to the working folder when it is inside it."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


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


ENTRY_LINE = '  "'


def read_lines(path: Path, digest: bool = False) -> Optional[dict]:
    """A recording in the form dumps_recording writes (its key on the first line, an entry a line), with each
    entry kept as its JSON text, to be parsed when it is looked up (parse_item): a replay of a large
    recording then never holds it all parsed at once; with `digest`, also the SHA-256 of the very text read
    (text_digest). None for a file of another layout."""
    hashed = hashlib.sha256() if digest else None
    try:
        with open(path, encoding="utf-8-sig") as f:
            first = f.readline()
            if not (first.startswith('{"key": ') and first.endswith(', "entries": {\n')):
                return None
            key = json.loads(first[len('{"key": '):-len(', "entries": {\n')])
            if hashed:
                hashed.update(first.encode())
            entries, decode, line = {}, json.JSONDecoder().raw_decode, ""
            for line in f:
                if hashed:
                    hashed.update(line.encode())
                if not line.startswith(ENTRY_LINE):
                    break
                name, at = decode(line, 2)
                entries[name] = line[at + 2:-2] if line.endswith(",\n") else line[at + 2:].rstrip("\n")
            rest = f.read()
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if (line + rest).strip() != "}}" or not isinstance(key, dict) or key.get("format") != FORMAT:
        return None
    if hashed:
        hashed.update(rest.encode())
    return {"key": key, "entries": entries, "lined": True, **({"digest": hashed.hexdigest()} if hashed else {})}


def parse_item(path: Path, name: str, raw: str, check: Optional[Callable[[str, Any], Optional[str]]]) \
        -> tuple[dict, bool]:
    """An entry kept as text by read_lines, parsed and checked as read_recording checks every entry; and
    whether orjson read it (json_text.parsed)."""
    try:
        item, quick = json_text.parsed(raw)
    except (ValueError, RecursionError):
        raise RecordingError(f"{shown(path)}: entries[{shown_name(name)}]: malformed JSON") from None
    wrong = item_problem(name, item, check)
    if wrong:
        raise RecordingError(f"{shown(path)}: entries[{shown_name(name)}].{wrong}")
    return item, quick


def read_recording(path: Path, check: Optional[Callable[[str, Any], Optional[str]]] = None,
                   lazy: bool = False, digest: bool = False) -> dict:
    """A recording's header and entries; a missing, malformed or old-format file, or an entry whose value is
    not of its kind's shape (`check(entry, value)` says what is wrong), is a RecordingError. With `lazy`, a
    file in the line layout keeps each entry as text (read_lines, with the file's `digest` if asked): it is
    checked when parsed."""
    if not Path(path).exists():
        raise RecordingError(f"{shown(path)}: no recording; record one with --live")
    if lazy:
        found = read_lines(path, digest)
        if found is not None:
            return found
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("key"), dict) or not isinstance(data.get("entries"), dict):
        raise RecordingError(f"{shown(path)}: not a recording (expected 'key' and 'entries')")
    if data["key"].get("format") != FORMAT:
        raise RecordingError(f"{shown(path)}: recorded in an older format without per-entry dependencies; "
                             "record again with --live --rerecord")
    for name, item in data["entries"].items():
        wrong = item_problem(name, item, check)
        if wrong:
            raise RecordingError(f"{shown(path)}: entries[{shown_name(name)}].{wrong}")
    return data


def read_key(path: Path) -> dict:
    """A recording's key alone, from its first line when the file starts with it (as this module writes
    recordings), else from the whole file, checked as read_recording checks it."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            first = f.readline()
        head = first.partition(', "entries": {')[0]
        if first.startswith('{"key": ') and head != first:
            key = json.loads(head[len('{"key": '):])
            if isinstance(key, dict) and key.get("format") == FORMAT:
                return key
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        pass
    return read_recording(path)["key"]


def item_problem(name: str, item: Any, check: Optional[Callable[[str, Any], Optional[str]]]) -> Optional[str]:
    """What is wrong with a recorded entry {"deps": {...}, "value": ...}, or None."""
    if not isinstance(item, dict):
        return "entry: expected an object with deps and value"
    if not isinstance(item.get("deps"), dict):
        return "deps: expected an object (the entry's dependencies)"
    if "value" not in item:
        return "value: missing"
    return check(name, item["value"]) if check else None


def shown_name(name: str) -> str:
    """An entry name as one printable line."""
    return name if isinstance(name, str) and name.isprintable() else repr(name)


def dumps_recording(key: dict, entries: dict) -> str:
    """A recording as JSON: its key, then each entry on a line of its own, so a diff shows the entries that
    changed and a large recording stays small and quick to read."""
    lines = ",\n".join(f"  {json.dumps(name)}: {item if isinstance(item, str) else json.dumps(item)}"
                        for name, item in entries.items())
    return f'{{"key": {json.dumps(key)}, "entries": {{\n{lines}\n}}}}\n' if entries else \
        f'{{"key": {json.dumps(key)}, "entries": {{}}}}\n'


def dump_entry(value: Any) -> Any:
    """A value as it will read back from JSON, so a live report and its replay see the same thing."""
    return json.loads(json.dumps(value))


def code_of(module) -> str:
    """A hash of a module's source file: the version of a check it defines."""
    return hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]


@cache
def reader_version() -> str:
    """What reading an entry depends on besides its text: this file, whichstage/json_text.py (which decides between
    orjson and json), orjson's version and Python's."""
    sources = Path(__file__).read_bytes() + Path(json_text.__file__).read_bytes()
    return hashlib.sha256(sources + f"{orjson.__version__} {sys.version}".encode()).hexdigest()[:16]


def text_digest(text: str) -> str:
    """The SHA-256 of a text's UTF-8, a megabyte at a time: of a recording's text as read_lines reads it back."""
    digest = hashlib.sha256()
    for start in range(0, len(text), 1 << 20):
        digest.update(text[start:start + (1 << 20)].encode())
    return digest.hexdigest()


def exclusive(handle) -> bool:
    """An exclusive lock on an open file, taken without waiting: False when another process holds it. The
    system drops it when its process ends, however it ends. fcntl.flock on POSIX (portalocker's own way there,
    without its import), portalocker on Windows."""
    if os.name == "nt":
        import portalocker

        try:
            portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.LockException:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def journal_of(path: Path) -> Path:
    """The journal of a recording's live runs: `.NAME.partial.jsonl` beside it."""
    return Path(path).with_name(f".{Path(path).stem}.partial.jsonl")


def read_journal(path: Path, check: Optional[Callable[[str, Any], Optional[str]]] = None) -> Optional[dict]:
    """A journal as written: its header line (`first`, and `meta` parsed, or None), its whole entries by name,
    its damaged lines (a torn last line, or any line that is not a whole entry), and `ended`: why the run
    that wrote it last ended incomplete (its `.ended` file beside it, Cassette.incomplete), or None when it
    was interrupted. None for a missing or empty journal. A whole entry whose value has the wrong shape
    (`check`) is a RecordingError."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    if not text.strip():
        return None
    lines = text.split("\n")
    whole = text.endswith("\n")
    lines = lines[:-1] if whole else lines  # without a final newline, the last line is torn
    try:
        meta = json.loads(lines[0])
    except (ValueError, RecursionError):  # ValueError: malformed, or an integer longer than Python converts
        meta = None
    entries, damaged = {}, []
    for number, line in enumerate(lines[1:], start=2):
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            item = None
        if not (isinstance(item, dict) and isinstance(item.get("entry"), str) and isinstance(item.get("deps"), dict)
                and "value" in item) or (number == len(lines) and not whole):
            damaged.append(line)
            continue
        wrong = check(item["entry"], item["value"]) if check else None
        if wrong:
            raise RecordingError(f"{shown(path)}: line {number} ({shown_name(item['entry'])}): {wrong}; "
                                 "move the journal aside to record its entries again")
        entries[item["entry"]] = {"deps": item["deps"], "value": item["value"]}
    try:
        ended = ended_of(path).read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        ended = None
    return {"first": lines[0], "meta": meta, "entries": entries, "damaged": damaged, "ended": ended}


def ended_of(journal: Path) -> Path:
    """Beside a journal, why the run that last wrote it ended incomplete (Cassette.incomplete); none when it
    was interrupted."""
    return Path(journal).with_name(f"{Path(journal).name}.ended")


def parts_changed(old: dict[str, str], new: dict[str, str], shown_parts: int = 3) -> str:
    """Which parts changed between two indexes (hash by id): 'faq edited, setup added, old removed, and 2 more'."""
    named = [f"{shown_name(p)} {'edited' if p in old else 'added'}" for p, h in new.items() if old.get(p) != h]
    named += [f"{shown_name(p)} removed" for p in old if p not in new]
    more = f", and {len(named) - shown_parts:,} more" if len(named) > shown_parts else ""
    return ", ".join(named[:shown_parts]) + more if named else "the same ones, in another order"


def entry_count(n: int, adjective: str = "") -> str:
    """'1 entry', '2 entries', '1 new entry'."""
    return f"{n} {adjective + ' ' if adjective else ''}entr{'y' if n == 1 else 'ies'}"


def left_by(journal: dict) -> str:
    """The run that left a journal (read_journal), as a resuming run names it: interrupted, or incomplete."""
    if journal["ended"] is None:
        return "an interrupted run"
    return f"the last run (not interrupted: it ended incomplete, {journal['ended']})"


WRITERS = {"live": "another live run is recording it", "merge": "a merge of its shards is writing it"}


def hold(path: Path, writer: str = "live"):
    """The exclusive lock on `.NAME.lock` beside a recording, as the open lock file holding it (close it to
    release): one writer of a recording at a time, a live run (`writer` "live") or a merge ("merge"). Another
    process holding it is a RecordingError naming what it is, its pid and its start time."""
    import datetime

    lock = Path(path).with_name(f".{Path(path).stem}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock, "a+", encoding="utf-8")
    try:
        held = exclusive(handle)
    except OSError as e:  # a file system without locks (some network or FUSE mounts)
        handle.close()
        raise RecordingError(f"{shown(lock)}: cannot take the live run's lock: {e.strerror or e}") from None
    except BaseException:
        handle.close()
        raise
    if not held:
        handle.seek(0)
        lines = handle.read().splitlines()
        handle.close()
        holder = " ".join(lines[0].split())[:120] if lines and lines[0].strip() else "another process"
        other = WRITERS.get(lines[1].strip() if len(lines) > 1 else "live", WRITERS["live"])
        raise RecordingError(f"{shown(path)}: {other} ({holder}); wait for it to end, or stop it")
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}, since {datetime.datetime.now().isoformat(timespec='seconds')}\n{writer}\n")
    handle.flush()
    return handle


class Cassette:
    def __init__(self, path: Path, header: dict, live: bool, rerecord: bool = False,
                 check: Optional[Callable[[str, Any], Optional[str]]] = None,
                 predict: Optional[Callable[[str], Any]] = None, also: Optional[tuple[Path, dict]] = None,
                 stamp: Optional[tuple[str, Path]] = None):
        """`predict` makes a dry live run (a plan): nothing is computed, locked or written; a missing entry is
        noted in `planned` with why, and `predict(entry)` stands in for its value. `also` is (path, header)
        of another recording whose entries this one may reuse, read only (a shard reads the project's).
        `stamp` is (the version of `check`, say code_of its module; a file): a recording whose very bytes
        passed that check once is read unchecked, as that file, its stamp, says."""
        self.path, self.live, self.rerecord, self.check, self.predict = Path(path), live, rerecord, check, predict
        self.checked_by, self.stamp = stamp if stamp is not None and check is not None else (None, None)
        self.digest: Optional[str] = None  # of the file's bytes as read, when checked_by asks for its stamp
        self.trusted = False  # the stamp holds this digest: every entry of the file was read and checked before
        self.slow = False  # an entry of the file was read by json, not orjson: its bytes are not stamped
        self.kept: set[str] = set()  # the file's entries save() kept unread (a run of some cases)
        self.planned: list[tuple[str, list[str]]] = []
        self.key = {"format": FORMAT, **header}
        self.journal = journal_of(self.path)
        # The file's entries (each as its JSON text until looked up, when read_lines could keep it so), then
        # the journal's, by name; and those current in this run, what save() writes.
        self.recorded: dict[str, Any] = {}
        self.used: dict[str, Any] = {}
        self.computed = 0
        self.on_disk: dict[str, Any] = {}  # the file's entries, each as its text until looked up
        self.lined = False  # the file's entries are all texts (read_lines), never objects
        self.seen: dict[str, str] = {}  # one copy of each string at the top of the values parsed (shared)
        self.lock = threading.Lock()
        self.notes: list[str] = []  # what live mode kept, set aside or dropped, for the user
        self.held = None  # the open lock file of a live run
        self.indexes: dict[str, Callable[[], dict[str, str]]] = {}  # field -> the hash of each of its parts now
        self.explained: dict[tuple[str, Any], str] = {}  # (field, its recorded hash) -> why, once each
        self.indexed = 0  # indexes (index) this run wrote anew: no call made, nothing kept either
        if not live:
            data = read_recording(self.path, check, lazy=True, digest=self.checked_by is not None)
            self._trust(data.get("digest"))
            changed = key_changes(data["key"], self.key)
            if changed:
                raise RecordingError(f"{shown(self.path)}: recording is stale: "
                                     + ", ".join(f"{f} changed" for f in changed) + "; record again with --live")
            self.recorded = data["entries"]
        else:
            if predict is None:
                self._hold()
            try:
                self._resume()
                if also is not None and not self.rerecord:
                    self._reuse(*also)
            except BaseException:
                self.close()
                raise

    def _reuse(self, path: Path, header: dict) -> None:
        """Entries of another recording of the same case set and models, where this one lacks them: its file's,
        and those its journal holds (an interrupted or incomplete run of it), read only."""
        key = {"format": FORMAT, **header}
        found = {}
        if Path(path).exists():
            data = read_recording(path, self.check)
            if not key_changes(data["key"], key):
                found.update(data["entries"])
        journal = read_journal(journal_of(path), self.check)  # what its last run paid for and did not write
        if journal is not None and isinstance(journal["meta"], dict) and journal["meta"].get("key") == key:
            found.update(journal["entries"])
        for name, item in found.items():
            self.recorded.setdefault(name, item)

    def _hold(self) -> None:
        """One live run per recording: its lock (hold), held until close()."""
        self.held = hold(self.path)

    def close(self) -> None:
        """Release the live run's lock (also on save); safe to call twice."""
        if self.held is not None:
            self.held.close()
            self.held = None

    def _resume(self) -> None:
        """Start from the entries already paid for: the recording's and an interrupted run's journal; --rerecord
        starts from none, and resuming an interrupted --rerecord from its journal's alone. Which of them are
        still current is decided entry by entry, in `get`. A recording that cannot be read is never replaced
        unless --rerecord says so: that would pay for every entry again."""
        journal = self._read_journal()
        if self.rerecord:
            n = len(journal["entries"]) if journal else 0
            dropped = f"; the {entry_count(n)} {left_by(journal)} kept {'is' if n == 1 else 'are'} dropped" \
                if journal else ""
            self.notes.append(f"--rerecord: calling the models for every entry again{dropped}")
            if journal is not None:
                if self.predict is None:
                    self.journal.unlink()  # --rerecord starts over, even after an interrupted run
                journal = None
        elif journal is not None and journal["rerecord"]:
            self.rerecord = True  # a --rerecord that was interrupted must not be topped up from the old file
        if self.path.exists():
            try:
                data = read_recording(self.path, self.check, lazy=True, digest=self.checked_by is not None)
            except RecordingError as e:
                if not self.rerecord:
                    raise RecordingError(f"{e}; it is not replaced (recording it again would pay for every "
                                         "entry): fix or move it, or start over deliberately with --rerecord") from None
                data = None
                self.notes.append(f"--rerecord: replacing {shown(self.path)}, which cannot be read")
            if data is not None:
                changed = key_changes(data["key"], self.key)
                if changed:  # another case set or other models (their names map to this file): never replaced
                    raise RecordingError(f"{shown(self.path)}: holds the recording of " + ", ".join(
                        f"{f} {data['key'].get(f)!r}" for f in changed) + ", not " + ", ".join(
                        f"{f} {self.key.get(f)!r}" for f in changed) + "; it is not replaced: move it aside")
                self.on_disk, self.lined = data["entries"], data.get("lined", False)
                self._trust(data.get("digest"))
                if not self.rerecord:
                    self.recorded.update(data["entries"])
        if journal is not None:
            # What the journal adds to the recording: all of it for an interrupted --rerecord, which does not
            # use the file's entries; else what the file lacks (a run killed after saving holds nothing new).
            kept = [e for e, item in journal["entries"].items() if self.rerecord or self.disk_item(e) != item]
            self.recorded.update({e: journal["entries"][e] for e in kept})  # the others: the file has them
            if kept:
                rest = "; the rest of its --rerecord is called again" if self.rerecord else ""
                self.notes.append(f"resuming: {entry_count(len(kept))} from {left_by(journal)} "
                                  f"{'is' if len(kept) == 1 else 'are'} kept (in {shown(self.journal)}){rest}")

    def _aside(self, why: str, lines: Optional[list[str]] = None) -> Path:
        """Keep the journal (or, with `lines`, those lines of it) aside, beside it, never deleted; its path."""
        import datetime

        stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S%f")
        aside = self.journal.with_name(f"{self.journal.name}.{why}-{stamp}")
        if lines is None:
            os.replace(self.journal, aside)
        else:
            write_atomic(aside, "".join(line + "\n" for line in lines))
        return aside

    def _read_journal(self) -> Optional[dict]:
        """The journal's entries when it was written under this header (read_journal), and how the run that
        left it ended. What cannot be used is kept aside and said, never deleted: a journal of another header
        whole, a damaged line alone (a torn last line after a crash, or any other); the journal is then
        rewritten with its whole lines, so the next entry appended starts a line of its own."""
        found = read_journal(self.journal, self.check)
        if self.predict is None:
            ended_of(self.journal).unlink(missing_ok=True)  # this run's own end is what the next one reads
        if found is None:
            if self.journal.exists() and self.predict is None:
                self.journal.unlink()  # empty: nothing in it was paid for
            return None
        meta = found["meta"]
        if not isinstance(meta, dict) or meta.get("key") != self.key:
            if self.predict is not None:
                return None  # a plan only reads: the run it plans will keep this journal aside
            why = "other-header" if isinstance(meta, dict) else "unreadable-header"
            said = ("it was recorded with other models or cases" if isinstance(meta, dict) else
                    "its first line is not a readable header")
            aside = self._aside(why)
            self.notes.append(f"kept aside {shown(aside)}: {said}; its entries are not used")
            return None
        entries, damaged = found["entries"], found["damaged"]
        if damaged and self.predict is None:
            aside = self._aside("damaged", damaged)
            whole = [found["first"]] + [json.dumps({"entry": e, **item}) for e, item in entries.items()]
            write_atomic(self.journal, "".join(line + "\n" for line in whole))
            self.notes.append(f"kept aside {shown(aside)}: {len(damaged)} damaged line"
                              f"{'' if len(damaged) == 1 else 's'} of {shown(self.journal)}; its other "
                              f"{entry_count(len(entries))} {'is' if len(entries) == 1 else 'are'} kept")
        return {"rerecord": meta.get("rerecord", False), "entries": entries, "ended": found["ended"]}

    def incomplete(self, why: str) -> None:
        """Note beside the journal (ended_of) that this run ended incomplete (`why`, say '2 cases errored'),
        not interrupted, so the next run says so when it resumes from it. Nothing when there is no journal."""
        with self.lock:
            if self.predict is None and self.journal.exists():
                write_atomic(ended_of(self.journal), why + "\n")

    def _trust(self, digest: Optional[str]) -> None:
        self.digest = digest
        if digest is not None:
            try:
                self.trusted = self.stamp.read_text(encoding="utf-8") == self._stamp_text(digest)
            except (OSError, UnicodeDecodeError):
                self.trusted = False

    def _stamp_text(self, digest: str) -> str:
        return f"{reader_version()} {self.checked_by} {digest}\n"

    def _parse(self, entry: str, text: str) -> dict:
        """A file's entry kept as text, parsed and checked (parse_item); unchecked when the stamp vouches."""
        if self.trusted:
            return orjson.loads(text)  # these very bytes were read by orjson and passed the check before
        item, quick = parse_item(self.path, entry, text, self.check)
        if not quick:
            self.slow = True  # only ever set, so threads reading at once cannot lose it
        return item

    def _vouch(self, digest: str) -> None:
        """Stamp a file of these bytes as checked; a stamp that cannot be written costs the next run its checks."""
        try:
            write_atomic(self.stamp, self._stamp_text(digest))
        except OSError:
            pass

    def remember_checked(self) -> None:
        """After a replay or a live run that read every entry of the file and found each well formed: stamp its
        bytes, so the next run reads them unchecked. A replay marks each entry it read (lookup); a live run
        read those it used."""
        if self.digest is None or self.trusted or self.slow or self.kept:
            return
        if self.unchanged() if self.live else all(type(text) is tuple for text in self.recorded.values()):
            self._vouch(self.digest)

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
        if self.live:
            with self.lock:
                stored = self.used.get(entry)
                known = stored is not None
                if not known:
                    stored = self.recorded.get(entry)
        else:  # a replay uses none and runs in one thread: one lookup, no lock
            stored, known = self.recorded.get(entry), False
        if stored is None:
            return ABSENT, ["not recorded"]
        if type(stored) is tuple:  # a replay's mark of an entry it read once already
            stored = stored[0]
        item = stored
        if isinstance(stored, str):
            item = self._parse(entry, stored)
            if not self.live and self.digest is not None and not self.trusted:
                self.recorded[entry] = (stored,)  # read and checked: remember_checked counts on it
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
        if type(stored) is tuple:
            stored = stored[0]
        return self._parse(f"index/{field}", stored) if isinstance(stored, str) else stored

    def get(self, entry: str, deps_of: Callable[[Any], dict], compute: Optional[Callable[[], Any]] = None) -> Any:
        """The current value of `entry`; in live mode a missing or stale one is computed and journaled."""
        value, why = self.lookup(entry, deps_of)
        if value is not ABSENT:
            return value
        if not self.live:
            raise Stale(entry, why)
        if self.predict is not None:  # a plan: say what would be called, and go on with a stand-in value
            value = dump_entry(self.predict(entry))
            with self.lock:
                self.planned.append((entry, why))
                self.used[entry] = {"deps": {}, "value": value}
            return value
        value = dump_entry(compute())
        item = {"deps": dump_entry(deps_of(value)), "value": value}
        self._journal(entry, item)
        with self.lock:
            self.used[entry] = self.recorded[entry] = item
            self.computed += 1
        return value

    def _journal(self, entry: str, item: dict) -> None:
        line = json.dumps({"entry": entry, **item}) + "\n"
        with self.lock:
            try:
                if not self.journal.exists():
                    self.journal.parent.mkdir(parents=True, exist_ok=True)
                    with open(self.journal, "w", encoding="utf-8") as f:
                        f.write(json.dumps({"key": self.key, "rerecord": self.rerecord}) + "\n")
                with open(self.journal, "a", encoding="utf-8") as f:
                    f.write(line)  # one write per whole line; a crash can tear only the last one
            except OSError as e:
                e.filename = str(self.journal)  # a full disk names the journal, not "output"
                raise

    def dumps(self) -> str:
        """Entries sorted by name, so the file does not depend on the order calls completed in."""
        with self.lock:
            entries = dict(sorted(self.used.items()))
        return dumps_recording(self.key, entries)

    def _all_checked(self) -> bool:
        """Whether every entry this run used reads back with orjson and passes the check: the file's own text
        as this run read it, the others (computed, the journal's, or the file's read as one document) written
        and read now, one at a time."""
        with self.lock:
            entries = list(self.used.items())
        for name, item in entries:
            if isinstance(item, str) and item is self.on_disk.get(name):  # the file's text of it
                if not self.trusted and (self.slow or name in self.kept):
                    return False
                continue  # read and checked by this run, as it used it
            try:
                value, quick = json_text.parsed(item if isinstance(item, str) else json.dumps(item))
            except (ValueError, RecursionError):
                return False
            if not quick or item_problem(name, value, self.check):
                return False
        return True

    def unchanged(self) -> bool:
        """True when the entries this run used are exactly the ones the file holds."""
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
                        self.kept.add(name)
        written = not self.unchanged()
        if written:
            text = self.dumps()
            write_atomic(self.path, text)
            if self.checked_by is not None:
                digest, text = text_digest(text), None
                if self._all_checked():
                    self._vouch(digest)
        else:
            self.remember_checked()
        if self.journal.exists():
            self.journal.unlink()
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

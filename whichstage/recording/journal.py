"""The journal of a recording's live runs, `.NAME.partial.jsonl` beside it: a header line, then each entry paid
for, a line each, appended at once, so an interrupted run keeps everything it paid for; what the next run
cannot use of it is kept aside, never deleted."""
import datetime
import json
import os
from pathlib import Path
from typing import Optional

from whichstage._util.files import RecordingError, shown, write_atomic
from whichstage.recording.format import Check, entry_count, shown_name


def journal_of(path: Path) -> Path:
    """The journal of a recording's live runs: `.NAME.partial.jsonl` beside it."""
    return Path(path).with_name(f".{Path(path).stem}.partial.jsonl")


def ended_of(journal: Path) -> Path:
    """Beside a journal, why the run that last wrote it ended incomplete (incomplete); none when it was
    interrupted."""
    return Path(journal).with_name(f"{Path(journal).name}.ended")


def read_journal(path: Path, check: Optional[Check] = None) -> Optional[dict]:
    """A journal as written: its header line (`first`, and `meta` parsed, or None), its whole entries by name,
    its damaged lines (a torn last line, or any line that is not a whole entry), and `ended`: why the run
    that wrote it last ended incomplete (ended_of), or None when it was interrupted. None for a missing or
    empty journal. A whole entry whose value has the wrong shape (`check`) is a RecordingError."""
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
    entries: dict[str, dict] = {}
    requests: dict[str, dict] = {}  # each answered request by its key (request_line)
    damaged: list[str] = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            item = None
        if number == len(lines) and not whole:
            damaged.append(line)
            continue
        if request_line(item, requests):
            continue
        if not (isinstance(item, dict) and isinstance(item.get("entry"), str) and isinstance(item.get("deps"), dict)
                and "value" in item):
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
    return {"first": lines[0], "meta": meta, "entries": entries, "requests": requests, "damaged": damaged,
            "ended": ended}


def request_line(item: object, requests: dict) -> bool:
    """Whether a journal line is about a request (cassette/requests.py): one answered, kept in `requests` by its
    key, or those a failed call forgets, taken out of it."""
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("request"), str) and isinstance(item.get("entries"), list) and "status" in item:
        requests[item["request"]] = {k: v for k, v in item.items() if k != "request"}
        return True
    if isinstance(item.get("forget"), list):
        for key in item["forget"]:
            requests.pop(key, None)
        return True
    return False


def left_by(journal: dict) -> str:
    """The run that left a journal (read_journal), as a resuming run names it: interrupted, or incomplete."""
    if journal["ended"] is None:
        return "an interrupted run"
    return f"the last run (not interrupted: it ended incomplete, {journal['ended']})"


def aside(path: Path, why: str, lines: Optional[list[str]] = None) -> Path:
    """Keep the journal (or, with `lines`, those lines of it) aside, beside it, never deleted; its path."""
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S%f")
    kept = path.with_name(f"{path.name}.{why}-{stamp}")
    if lines is None:
        os.replace(path, kept)
    else:
        write_atomic(kept, "".join(line + "\n" for line in lines))
    return kept


def resume(path: Path, key: dict, check: Optional[Check], notes: list[str]) -> Optional[dict]:
    """The journal's entries when it was written under `key` (read_journal), whether its run was a --rerecord,
    and how it ended. What cannot be used is kept aside and said in `notes`: a journal of another header
    whole, a damaged line alone (a torn last line after a crash, or any other); the journal is then rewritten
    with its whole lines, so the next entry appended starts a line of its own. An empty journal is removed."""
    found = read_journal(path, check)
    ended_of(path).unlink(missing_ok=True)  # this run's own end is what the next one reads
    if found is None:
        path.unlink(missing_ok=True)  # empty: nothing in it was paid for
        return None
    meta = found["meta"]
    if not isinstance(meta, dict) or meta.get("key") != key:
        said = ("it was recorded with other models or cases" if isinstance(meta, dict) else
                "its first line is not a readable header")
        kept = aside(path, "other-header" if isinstance(meta, dict) else "unreadable-header")
        notes.append(f"kept aside {shown(kept)}: {said}; its entries are not used")
        return None
    entries, damaged = found["entries"], found["damaged"]
    if damaged:
        kept = aside(path, "damaged", damaged)
        whole = [found["first"]] + [json.dumps({"entry": e, **item}) for e, item in entries.items()] + [
            json.dumps({"request": key, **item}) for key, item in found["requests"].items()]
        write_atomic(path, "".join(line + "\n" for line in whole))
        lines, others = f"line{'' if len(damaged) == 1 else 's'}", entry_count(len(entries))
        notes.append(f"kept aside {shown(kept)}: {len(damaged)} damaged {lines} of {shown(path)}; its other {others} "
                     f"{'is' if len(entries) == 1 else 'are'} kept")
    return resumable(found)


def resumable(found: dict) -> dict:
    """Of a journal read (read_journal) under the right header: its entries, how its run ended, and whether
    that run was a --rerecord."""
    return {"rerecord": found["meta"].get("rerecord", False), "entries": found["entries"],
            "requests": found["requests"], "ended": found["ended"]}


def usable(path: Path, key: dict, check: Optional[Check]) -> Optional[dict]:
    """What resume would keep of the journal, read only (for a plan, or another recording's journal): nothing
    is kept aside, rewritten or removed."""
    found = read_journal(path, check)
    if found is None or not isinstance(found["meta"], dict) or found["meta"].get("key") != key:
        return None
    return resumable(found)


def append(path: Path, header: dict, entry: str, item: dict) -> None:
    """Append one entry as one whole line (append_line)."""
    append_line(path, header, {"entry": entry, **item})


def append_line(path: Path, header: dict, item: dict) -> None:
    """Append one line (an entry, or a request: cassette/requests.py), whole, starting the journal with `header`
    when there is none: a crash can tear only the last line. A write that fails names the journal."""
    line = json.dumps(item) + "\n"
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(header) + "\n")
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
    except OSError as e:
        e.filename = str(path)  # a full disk names the journal, not "output"
        raise


def incomplete(path: Path, why: str) -> None:
    """Note beside the journal (ended_of) that its run ended incomplete (`why`, say '2 cases errored'), not
    interrupted, so the next run says so when it resumes from it. Nothing when there is no journal."""
    if path.exists():
        write_atomic(ended_of(path), why + "\n")

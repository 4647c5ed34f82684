"""The recording's file format: its key on the first line, then one entry a line, each {"deps": ..., "value": ...};
written by dumps_recording, read whole (read_recording) or with each entry kept as its text (read_lines)."""
import json
from pathlib import Path
from typing import Any, Callable, Optional

from whichstage._util import jsontext as json_text
from whichstage._util.files import RecordingError, read_json, shown

FORMAT = 2  # entries with their own dependencies; format 1 had one key for the whole file
ENTRY_LINE = '  "'
HEAD, TAIL = '{"key": ', ', "entries": {\n'
SECTION = '}, "requests": {\n'  # the line after the last entry that starts the recorded requests (cassette/requests.py)

Check = Callable[[str, Any], Optional[str]]  # what is wrong with an entry's value, or None


def read_lines(path: Path, requests: bool = False) -> Optional[dict]:
    """A recording in the form dumps_recording writes, with each entry kept as its JSON text, to be parsed when
    it is looked up (parse_item): a replay of a large recording never holds it all parsed at once. With
    `requests`, the recorded requests too, each as its text (cassette/requests.py); without, their lines are
    not parsed (a replay needs none). None for a file of another layout."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            first = f.readline()
            if not (first.startswith(HEAD) and first.endswith(TAIL)):
                return None
            key = json.loads(first[len(HEAD):-len(TAIL)])
            entries, line = named_lines(f)
            found: dict = {}
            if line == SECTION:
                if requests:
                    found, line = named_lines(f)
                else:
                    line = f.read()[-4:]  # read, not parsed: only its end is checked
            rest = f.read()
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if (line + rest).strip() != "}}" or not isinstance(key, dict) or key.get("format") != FORMAT:
        return None
    return {"key": key, "entries": entries, "requests": found, "lined": True}


def named_lines(f) -> tuple[dict[str, str], str]:
    """The lines `  "name": {...}` from here, each as its value's text by its name, and the line that ends them."""
    found: dict[str, str] = {}
    decode, line = json.JSONDecoder().raw_decode, ""
    for line in f:
        if not line.startswith(ENTRY_LINE):
            return found, line
        name, at = decode(line, 2)
        found[name] = line[at + 2:-2] if line.endswith(",\n") else line[at + 2:].rstrip("\n")
    return found, ""


def parse_item(path: Path, name: str, raw: str, check: Optional[Check]) -> dict:
    """An entry kept as text by read_lines, parsed and checked as read_recording checks every entry."""
    try:
        item = json_text.loads(raw)
    except (ValueError, RecursionError):
        raise RecordingError(f"{shown(path)}: entries[{shown_name(name)}]: malformed JSON") from None
    wrong = item_problem(name, item, check)
    if wrong:
        raise RecordingError(f"{shown(path)}: entries[{shown_name(name)}].{wrong}")
    return item


def read_recording(path: Path, check: Optional[Check] = None, lazy: bool = False, requests: bool = False) -> dict:
    """A recording's header and entries; a missing, malformed or old-format file, or an entry whose value is
    not of its kind's shape (`check(entry, value)` says what is wrong), is a RecordingError. With `lazy`, a
    file in the line layout keeps each entry as text (read_lines): it is checked when parsed; with `requests`
    too, its recorded requests, each as text."""
    if not Path(path).exists():
        raise RecordingError(f"{shown(path)}: no recording; record one with --live")
    if lazy:
        found = read_lines(path, requests)
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
    """A recording's key alone, from its first line when the file starts with it (as dumps_recording writes
    it), else from the whole file, checked as read_recording checks it."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            first = f.readline()
        head = first.partition(TAIL.rstrip("\n"))[0]
        if first.startswith(HEAD) and head != first:
            key = json.loads(head[len(HEAD):])
            if isinstance(key, dict) and key.get("format") == FORMAT:
                return key
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        pass
    return read_recording(path)["key"]


def item_problem(name: str, item: Any, check: Optional[Check]) -> Optional[str]:
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


def entry_count(n: int, adjective: str = "") -> str:
    """'1 entry', '2 entries', '1 new entry'."""
    return f"{n} {adjective + ' ' if adjective else ''}entr{'y' if n == 1 else 'ies'}"


def dumps_recording(key: dict, entries: dict, requests: Optional[dict] = None) -> str:
    """A recording as JSON: its key, then each entry on a line of its own (an entry kept as text as it is), so
    a diff shows the entries that changed and a large recording stays small and quick to read; then, when
    there are any, the recorded requests, a line each (cassette/requests.py)."""
    lines = item_lines(entries)
    head = f"{HEAD}{json.dumps(key)}"
    if not entries:
        return f'{head}, "entries": {{}}}}\n'
    return f"{head}{TAIL}{lines}\n{dumps_requests(requests or {})}}}}}\n"


def dump_entry(value: Any) -> Any:
    """A value as it will read back from JSON, so a live report and its replay see the same thing."""
    return json.loads(json.dumps(value))


def dumps_requests(requests: dict[str, Any]) -> str:
    """The requests' section of a recording, a request a line, as dumps_recording ends it; '' for none."""
    return f"{SECTION}{item_lines(requests)}\n" if requests else ""


def item_lines(items: dict[str, Any]) -> str:
    """Each item on a line of its own, `  "name": {...}` (an item kept as text as it is), joined by commas."""
    return ",\n".join(f"  {json.dumps(name)}: {item if isinstance(item, str) else json.dumps(item)}"
                       for name, item in items.items())

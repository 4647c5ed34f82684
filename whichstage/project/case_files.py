"""Peer case files read and written: a DeepEval or Ragas file (JSONL, DeepEval's JSON list, or CSV) as its rows,
each with where it is in the file ('line 3', 'row 4'), and rows written back. A file that cannot be read as
rows is refused in one line naming the file and the line or row (peer_cases.py maps the rows to cases)."""
import csv
import io
import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from whichstage.model.errors import InputError
from whichstage.project.peer_cases import COLUMNS, DEEPEVAL, FORMATS, RAGAS, peer_of

CSV_CELL = 1 << 26  # the longest cell read (a page's whole text may be one): csv's own limit is 128 KiB


def format_of(path: Path, given: Optional[str], rows: Optional[list[dict]] = None) -> str:
    """The file's format: `given`, else its container from its suffix (.csv, else JSONL) and its peer from its
    first row's columns (Ragas' user_input, else DeepEval's), or DeepEval's when writing."""
    if given is not None:
        if given not in FORMATS:
            raise InputError(f"--format: unknown format {given!r} (valid: {', '.join(FORMATS)})")
        return given
    container = "csv" if path.suffix.lower() == ".csv" else "jsonl"
    peer = RAGAS if rows and "user_input" in rows[0] and "input" not in rows[0] else DEEPEVAL
    return f"{peer}-{container}"


def read_rows(path: Path, label: str, given: Optional[str] = None) -> tuple[str, list[tuple[str, dict]]]:
    """The file's format and its rows, each with where it is; one line naming the file and the spot for a
    file that cannot be read, a line that is no JSON object, a CSV row with more cells than the header."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{label}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{label}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    container = peer_of(given)[1] if given in FORMATS else "csv" if path.suffix.lower() == ".csv" else "jsonl"
    rows = list(csv_rows(text, label) if container == "csv" else json_rows(text, label))
    if not rows:
        raise InputError(f"{label}: no rows: nothing to import")
    fmt = format_of(path, given, [row for _, row in rows[:1]])
    peer = peer_of(fmt)[0]
    question = "user_input" if peer == RAGAS else "input"
    where, first = rows[0]
    if question not in first:
        raise InputError(f"{label}: {where}: no column {question!r}: read as {fmt}, whose rows ask their question "
                         f"there (the columns: {', '.join(COLUMNS[peer])})")
    return fmt, rows


def json_rows(text: str, label: str) -> Iterator[tuple[str, dict]]:
    """A JSON list of objects (DeepEval's .json) as '[i]' rows, else JSON Lines as 'line N' rows (blank lines
    skipped)."""
    if text.lstrip().startswith("["):
        for i, item in enumerate(parsed(text, label)):
            yield object_row(item, label, f"[{i}]")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            item = parsed(line, label, number)
            yield object_row(item, label, f"line {number}")


def parsed(text: str, label: str, line: Optional[int] = None) -> Any:
    """`text` as JSON (the whole file, or its line `line`); a malformed or too deeply nested one is an InputError
    naming `label` and the line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        where = f"line {e.lineno}: malformed JSON" if line is None else \
            f"line {line}: malformed JSON at column {e.colno}"
        raise InputError(f"{label}: {where}: {e.msg}") from None
    except RecursionError:
        raise InputError(f"{label}: {'' if line is None else f'line {line}: '}nested too deeply to read") from None


def object_row(item: object, label: str, where: str) -> tuple[str, dict]:
    if not isinstance(item, dict):
        raise InputError(f"{label}: {where}: expected an object, got {type(item).__name__}")
    return where, item


def csv_rows(text: str, label: str) -> Iterator[tuple[str, dict]]:
    """A CSV file with a header as 'row N' rows, numbered as a spreadsheet shows them (the header is row 1)."""
    csv.field_size_limit(max(csv.field_size_limit(), CSV_CELL))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    number = 1
    try:
        for number, row in enumerate(reader, start=2):
            if None in row:
                raise InputError(f"{label}: row {number}: {len(row) - 1 + len(row[None])} cells, more than the "
                                 f"header's {len(row) - 1} columns")
            if any(v is not None for v in row.values()):
                yield f"row {number}", {k: ("" if v is None else v) for k, v in row.items()}
    except csv.Error as e:
        raise InputError(f"{label}: row {number + 1}: malformed CSV: {e}") from None


def jsonl_text(rows: Iterable[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def csv_text(rows: Iterable[dict], columns: tuple[str, ...]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    yield buffer.getvalue()
    for row in rows:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(row)
        yield buffer.getvalue()


def rows_text(rows: Iterable[dict], fmt: str) -> Iterator[str]:
    """Rows (their cells) as a file of `fmt` holds them."""
    peer, container = peer_of(fmt)
    return csv_text(rows, COLUMNS[peer]) if container == "csv" else jsonl_text(rows)

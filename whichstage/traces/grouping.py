"""Spans grouped by trace in bounded memory, whatever order the file holds them in: each span as it is read goes
to a temporary SQLite file (standard library), then the traces come out one at a time, in the order of their
first span in the file, each with its spans in file order. Memory holds one trace, never the file."""
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from whichstage.traces.spans import fault

MAX_TRACE_SPANS = 50_000  # a trace with more spans than this is no agent run: refused, naming it


def by_trace(spans: Iterable[dict], label: str) -> Iterator[list[dict]]:
    """The spans of each trace, read from `spans` (spans.py's shape) through a temporary file deleted after."""
    with tempfile.TemporaryDirectory(prefix="whichstage-import-") as folder:
        db = sqlite3.connect(str(Path(folder) / "spans.sqlite"))
        try:
            db.execute("PRAGMA journal_mode=OFF")
            db.execute("PRAGMA synchronous=OFF")
            db.execute("CREATE TABLE spans (trace TEXT, seq INTEGER, span TEXT)")
            db.execute("CREATE TABLE traces (trace TEXT PRIMARY KEY, first INTEGER, n INTEGER, span_where TEXT)")
            for seq, span in enumerate(spans):
                db.execute("INSERT INTO spans VALUES (?, ?, ?)", (span["trace"], seq, json.dumps(span)))
                db.execute("INSERT INTO traces VALUES (?, ?, 1, ?) ON CONFLICT(trace) DO UPDATE SET n = n + 1",
                           (span["trace"], seq, span["where"]))
                if seq % 10_000 == 0:
                    too_big(db, label)
            too_big(db, label)
            db.execute("CREATE INDEX by_trace ON spans (trace, seq)")
            for (trace,) in db.execute("SELECT trace FROM traces ORDER BY first").fetchall():
                yield [json.loads(text) for (text,) in
                       db.execute("SELECT span FROM spans WHERE trace = ? ORDER BY seq", (trace,))]
        finally:
            db.close()


def too_big(db: sqlite3.Connection, label: str) -> None:
    found = db.execute("SELECT trace, n, span_where FROM traces WHERE n > ? LIMIT 1", (MAX_TRACE_SPANS,)).fetchone()
    if found:
        raise fault(label, found[2], None, f"trace {found[0]} holds over {MAX_TRACE_SPANS:,} spans: an absurd size "
                                           "for one agent run")

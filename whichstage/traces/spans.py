"""The one span every format's reader gives (a dict): "trace", "id", "parent" (None for a root), "start" and
"end" (seconds), "where" (its place in the file), "kind" (agent, chain, llm, tool, retriever or other),
"name", and by kind: an llm span's "input" and "output" messages (whichstage/traces/messages.py) and
"usage"; a tool span's "tool", "args", "content", "artifact" and "call_id"; a retriever span's "documents";
any span's "question" and "case" (a case id its metadata names). Checks of what a reader takes from a file:
ids, token counts, times."""
import re
from typing import Any, Optional

from whichstage.traces.stream import TraceFileError

ID = re.compile(r"[A-Za-z0-9._:+/=-]{1,128}")  # hex (OTLP), a UUID (LangSmith), a line's own id
CASE_KEYS = ("case_id", "whichstage.case_id")  # a run's metadata naming its case (config={"metadata": ...})
MAX_TOKENS = 1 << 53  # a token count above this is no count


def fault(label: str, where: str, span: Optional[str], why: str) -> TraceFileError:
    """'FILE: span WHERE (id ID): WHY', the span's id shown when it has a readable one."""
    from whichstage._util.redact import printable

    named = f" (id {printable(span)})" if span else ""
    return TraceFileError(f"{label}: {where}{named}: {printable(why)}")


def checked_id(value: Any, field: str, label: str, where: str, span: Optional[str] = None,
               required: bool = True) -> Optional[str]:
    """An id as a string of at most 128 letters, digits and `._:+/=-`; a missing one is refused when
    `required`, any other value always (an id that holds a path or a control character is no id)."""
    if value in (None, "") and not required:
        return None
    if value in (None, ""):
        raise fault(label, where, span, f"no {field}: a span needs its ids")
    if not isinstance(value, str) or not ID.fullmatch(value):
        shown = repr(value)[:60]
        raise fault(label, where, span, f"{field} {shown} is not an id (at most 128 letters, digits and ._:+/=-)")
    return value


def count(value: Any, field: str, label: str, where: str, span: str) -> int:
    """A token count: a whole number from 0 to 2**53 (OTLP writes an intValue as a string)."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < MAX_TOKENS:
        raise fault(label, where, span, f"{field}: {repr(value)[:40]} is not a token count")
    return value


def seconds(value: Any, scale: float) -> Optional[float]:
    """A time as seconds: a number (or a numeric string) times `scale`; None for anything else."""
    try:
        found = float(value) * scale
    except (TypeError, ValueError):
        return None
    return found if found == found and abs(found) < 1e12 else None  # not NaN, not absurd


def case_of(metadata: Any) -> Optional[str]:
    """The case id a run's metadata names (CASE_KEYS), as text."""
    if not isinstance(metadata, dict):
        return None
    found = next((metadata[k] for k in CASE_KEYS if isinstance(metadata.get(k), (str, int))), None)
    return None if found is None else str(found)


def span(label: str, where: str, trace: Any, ident: Any, parent: Any, name: Any, start: Optional[float],
         end: Optional[float]) -> dict:
    """A span's common fields, its ids checked."""
    ident = checked_id(ident, "span id", label, where)
    trace = checked_id(trace, "trace id", label, where, ident)
    parent = checked_id(parent, "parent span id", label, where, ident, required=False)
    return {"trace": trace, "id": ident, "parent": parent, "start": start, "end": end, "where": where,
            "name": name if isinstance(name, str) else "", "kind": "other"}

"""Which format a trace file is in, and its spans read by that format's module: `otlp` (OTLP JSON by the GenAI
conventions, OpenLLMetry's included), `openinference` (OTLP JSON by OpenInference's), `langsmith` (a run
export) and `jsonl` (chat messages). Without --format it is told from the file's first value: an OTLP
request whose first span has an OpenInference span kind is `openinference`, any other `otlp`; a value with a
`run_type` (or `runs`) `langsmith`; one with `messages` `jsonl`."""
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from whichstage.traces import chat, langsmith
from whichstage.traces.spans import fault
from whichstage.traces.stream import TraceFileError, values

FORMATS = ("otlp", "openinference", "langsmith", "jsonl")
SPAN_FORMATS = ("otlp", "openinference")


def checked_format(name: Optional[str]) -> Optional[str]:
    """--format as given (None: detect it), refused unless it is one of FORMATS."""
    if name is not None and name not in FORMATS:
        raise TraceFileError(f"--format {name!r}: not a trace format (valid: {', '.join(FORMATS)})")
    return name


def item_format(value: Any) -> Optional[str]:
    if langsmith.is_run(value) or isinstance(value, dict) and isinstance(value.get("runs"), list):
        return "langsmith"
    return "jsonl" if chat.is_conversation(value) else None


class Spans:
    """The spans of a trace file, by its format (given, or detected from its first value into `format`)."""

    def __init__(self, path: Path, label: str, given: Optional[str] = None):
        self.path, self.label, self.format = path, label, checked_format(given)

    def __iter__(self) -> Iterator[dict]:
        from whichstage.traces.openinference import is_openinference, openinference_span
        from whichstage.traces.otlp import genai_span

        readers: dict[str, Callable[[str, str, Any], dict]] = {"otlp": genai_span,
                                                              "openinference": openinference_span}
        seen: set[str] = set()  # a conversation's id, once each
        for n, (kind, where, value) in enumerate(values(self.path, self.label), start=1):
            if self.format is None:
                self.format = ("openinference" if is_openinference(value) else "otlp") if kind == "span" \
                    else item_format(value)
                if self.format is None:
                    raise fault(self.label, where, None, "neither OTLP spans, a LangSmith run nor a conversation "
                                                         "(messages): name the format with --format")
            if (kind == "span") != (self.format in SPAN_FORMATS):
                found = "an OTLP span" if kind == "span" else "not an OTLP request (resourceSpans)"
                raise fault(self.label, where, None, f"{found}, in a file read as {self.format}")
            if kind == "span":
                yield readers[self.format](self.label, where, value)
            elif self.format == "langsmith":
                yield from langsmith.runs(self.label, where, value)
            else:
                spans = chat.conversation(self.label, where, value, n)
                if spans[0]["trace"] in seen:
                    raise fault(self.label, where, spans[0]["trace"], "a second conversation with this id")
                seen.add(spans[0]["trace"])
                yield from spans

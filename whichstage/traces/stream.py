"""A trace file read as a stream, never held whole: its top-level values one by one (JSONL, a JSON array, one
document), and in an OTLP document (`{"resourceSpans": [...]}`) each span on its own, so a file of any size
is read in the memory of its largest span. Standard library only: the values are cut out with json's own
decoder (raw_decode) from a buffer that keeps only what is not read yet."""
import json
from pathlib import Path
from typing import IO, Any, Iterator

from whichstage.model.errors import InputError

CHUNK = 1 << 20  # read 1 MiB at a time
MAX_VALUE = 32 << 20  # a span, a run or a line longer than this (in characters) is refused: an absurd size
WHITESPACE = " \t\r\n"


class TraceFileError(InputError):
    """A trace file that cannot be imported: one line naming the file and the span (or line) at fault."""


class Reader:
    """The text of a trace file from a position on, read in chunks; what is consumed is dropped."""

    def __init__(self, handle: IO[str], label: str):
        self.handle, self.label = handle, label
        self.buf, self.pos, self.eof, self.lines_before = "", 0, False, 0
        self.keep = False  # first_key looks ahead: what it reads must stay in the buffer
        self.decoder = json.JSONDecoder()

    def fail(self, why: str) -> TraceFileError:
        return TraceFileError(f"{self.label}: {why}")

    def line(self) -> int:
        """The line the reader is at (1-based)."""
        return self.lines_before + self.buf.count("\n", 0, self.pos) + 1

    def more(self) -> bool:
        """Read the next chunk; False at the end of the file."""
        if self.eof:
            return False
        if self.pos > CHUNK and not self.keep:  # drop what was read, keeping the count of its lines
            self.lines_before += self.buf.count("\n", 0, self.pos)
            self.buf, self.pos = self.buf[self.pos:], 0
        try:
            chunk = self.handle.read(CHUNK)
        except UnicodeDecodeError as e:
            raise self.fail(f"not UTF-8 text (line {self.line()}): {e.reason}") from None
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def ws(self) -> None:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buf) or not self.more():
                return

    def peek(self) -> str:
        """The next character that is not whitespace ('' at the end of the file)."""
        self.ws()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def expect(self, chars: str) -> str:
        found = self.peek()
        if not found or found not in chars:
            shown = repr(found) if found else "the end of the file"
            raise self.fail(f"malformed JSON at line {self.line()}: expected {' or '.join(map(repr, chars))}, "
                            f"found {shown}" + (" (truncated?)" if not found else ""))
        self.pos += 1
        return found

    def value(self, what: str) -> Any:
        """The next JSON value, whole (`what` names it in an error: 'span 3', 'line 7')."""
        self.ws()
        while True:
            try:
                found, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                cut = e.pos >= len(self.buf) - 8 or e.msg.startswith("Unterminated string")
                if cut and len(self.buf) - self.pos > MAX_VALUE:
                    raise self.fail(f"{what}: over {MAX_VALUE >> 20} MiB of text: an absurd size") from None
                if cut and self.more():
                    continue
                lineno = self.lines_before + e.lineno
                truncated = " (the file is truncated)" if cut and self.eof else ""
                raise self.fail(f"{what}: malformed JSON at line {lineno} column {e.colno}: {e.msg}{truncated}") \
                    from None
            except RecursionError:
                raise self.fail(f"{what}: nested too deeply to read") from None
            except ValueError as e:  # an integer longer than Python converts
                raise self.fail(f"{what}: {e}") from None
            if end - self.pos > MAX_VALUE:
                raise self.fail(f"{what}: over {MAX_VALUE >> 20} MiB of text: an absurd size")
            if end == len(self.buf) and isinstance(found, (int, float)) and self.more():
                continue  # a number that ends with the buffer may go on in the next chunk
            self.pos = end
            return found

    def key(self) -> str:
        self.ws()
        if self.peek() != '"':
            raise self.fail(f"malformed JSON at line {self.line()}: expected a property name")
        key = self.value("a property name")
        self.expect(":")
        return key

    def members(self) -> Iterator[str]:
        """The keys of the object that starts here, one by one: the caller reads each one's value."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            yield self.key()
            if self.expect(",}") == "}":
                return

    def elements(self) -> Iterator[int]:
        """The indexes of the array that starts here, one by one: the caller reads each element."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        index = 0
        while True:
            yield index
            index += 1
            if self.expect(",]") == "]":
                return

    def first_key(self) -> str:
        """The first key of the object that starts here, without reading past it ('' for none)."""
        start, self.keep = self.pos, True
        self.pos += 1
        try:
            return self.key() if self.peek() == '"' else ""
        finally:
            self.pos, self.keep = start, False


def otlp_spans(reader: Reader) -> Iterator[tuple[str, dict]]:
    """The spans of one OTLP export request (resourceSpans[].scopeSpans[].spans[]), each with where it is."""
    for key in reader.members():
        if key != "resourceSpans":
            reader.value(key)
            continue
        for r in reader.elements():
            for key in reader.members():
                if key != "scopeSpans":
                    reader.value(f"resourceSpans[{r}].{key}")
                    continue
                for s in reader.elements():
                    for key in reader.members():
                        if key != "spans":
                            reader.value(f"resourceSpans[{r}].scopeSpans[{s}].{key}")
                            continue
                        for n in reader.elements():
                            where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                            yield where, reader.value(f"span {where}")


def values(path: Path, label: str) -> Iterator[tuple[str, str, Any]]:
    """Each value of the file, as (kind, where, value): kind "span" (an OTLP span, where its place in the
    request), or "item" (a top-level value, or an element of a top-level array: a run, a conversation)."""
    try:
        handle = open(path, encoding="utf-8-sig", newline="")
    except OSError as e:
        raise TraceFileError(f"{label}: cannot read: {e.strerror or e}") from None
    with handle:
        reader, count = Reader(handle, label), 0
        while reader.peek():
            count += 1
            line = reader.line()
            if reader.peek() == "[":
                for i in reader.elements():
                    yield "item", f"line {line} item {i}", reader.value(f"item {i}")
            elif reader.peek() == "{" and reader.first_key() == "resourceSpans":
                for where, span in otlp_spans(reader):
                    yield "span", where if count == 1 else f"line {line} {where}", span
            elif reader.peek() == "{":
                yield "item", f"line {line}", reader.value(f"line {line}")
            else:
                raise reader.fail(f"line {line}: expected a JSON object or array, found {reader.peek()!r}")
        if count == 0:
            raise TraceFileError(f"{label}: empty: no trace in it")

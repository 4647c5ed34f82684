"""A command's text on stdout, ending the way a command line expects when stdout cannot take it, with no
control character of an input's text reaching the terminal raw (`visible`).

Standard library only, so any command can import it without pulling in the harness's heavier modules.

    from whichstage._util import console

    stopped = console.write_stdout(text, command="compare.py")
    if stopped is not None:
        return stopped  # the exit code: 0 when the reader left, 2 when stdout cannot be written

Two ways a write to stdout fails:

* The reader went away (`python compare.py A B | head`): Python ignores SIGPIPE, so the write raises
  BrokenPipeError. `head` closing the pipe early is not an error, so the command stops quietly with exit 0.
* Anything else (stdout on a full disk, `> /dev/full`): one line on stderr,
  `compare.py: stdout: cannot write: No space left on device`, and exit 2.

Either way stdout is then pointed at os.devnull, as the Python docs' note on SIGPIPE recommends
(https://docs.python.org/3/library/signal.html#note-on-sigpipe): the text still buffered would otherwise fail
again when the interpreter flushes stdout at exit, printing "Exception ignored ... BrokenPipeError" and
turning the exit code into 120. Later writes to stdout go nowhere, without error.
"""
import os
import re
import sys
from typing import Optional

# What a terminal or a page would act on instead of showing: C0 and C1 controls but tab and newline (ESC opens
# a terminal escape sequence, \r overwrites a line), the bidirectional controls (U+202E shows text reversed)
# and the line and paragraph separators. Joiners and other format characters that only shape text are kept.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
READER_GONE = 0  # `head` closing the pipe early is not the command's failure
CANNOT_WRITE = 2  # the command's usual code for bad input or an unwritable output


_NAMES: dict[str, str] = {}  # the name each command goes by in this process, when not its script's


def name(command: str) -> str:
    """What a message of `command` (a script's name, e.g. "evaluate.py") starts with: that name, or the console
    script's words for it (`whichstage run`) while the `whichstage` command runs it."""
    return _NAMES.get(command, command)


def named(names: dict[str, str]) -> dict[str, str]:
    """Messages of each command in `names` start with its new name; returns the names before, to restore."""
    before = dict(_NAMES)
    _NAMES.update(names)
    return before


def restore(before: dict[str, str]) -> None:
    _NAMES.clear()
    _NAMES.update(before)


def visible(text: str) -> str:
    """`text` with each control character (CONTROLS) written as its Python escape (`\\x1b`, `\\x00`,
    `\\u202e`), so it shows as characters; tab and newline kept. Every renderer of outside text applies it."""
    return text if text.isprintable() else CONTROLS.sub(lambda m: repr(m.group())[1:-1], text)


def write_stdout(text: str, *, command: str, end: str = "\n") -> Optional[int]:
    """Write `text` (`visible`) and `end` to stdout and flush it, so a failure surfaces here and not at exit.

    None when everything was written: carry on. Otherwise the exit code the command should end with:
    READER_GONE (0) when the reader closed the pipe, nothing said; CANNOT_WRITE (2) when stdout cannot be
    written, after one line on stderr naming `command` (e.g. "compare.py") and the reason. In both cases
    stdout is redirected to os.devnull first (see stdout_to_devnull)."""
    try:
        sys.stdout.write(visible(text) + end)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_to_devnull()
        return READER_GONE
    except OSError as e:
        stdout_to_devnull()
        print(f"{command}: stdout: cannot write: {e.strerror or e}", file=sys.stderr)
        return CANNOT_WRITE
    return None


def stdout_to_devnull() -> None:
    """Point stdout at os.devnull: what is still buffered, and anything printed later, is dropped without error.

    The file descriptor under sys.stdout is replaced (os.dup2), so the buffered text goes to os.devnull when
    Python flushes stdout at exit. A stdout with no file descriptor (one a test put in place) is replaced
    by an os.devnull file instead."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both an OSError and a ValueError
        sys.stdout = open(os.devnull, "w")
    finally:
        os.close(devnull)


def quiet_interrupts(command: str) -> None:
    """Ctrl-C before a command's own handling is in place (during its start-up imports): one line,
    `evaluate.py: interrupted`, instead of a traceback; the process still ends as an interrupted one (130).
    Call it first thing in a command module run as a script."""
    previous = sys.excepthook

    def hook(kind, value, traceback):
        if issubclass(kind, KeyboardInterrupt):
            print(f"{command}: interrupted", file=sys.stderr)
            return
        previous(kind, value, traceback)
    sys.excepthook = hook


def first_line(error: BaseException) -> str:
    """An error as one line: its type and the first line of its text."""
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"


def cases(n: int) -> str:
    """'1 case', '3 cases'."""
    return f"{n} case{'' if n == 1 else 's'}"

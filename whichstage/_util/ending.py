"""The one mapping every command shares from what ended it to the line it prints and its exit code."""
import sys
from typing import Optional

from whichstage._util.console import visible
from whichstage._util.exits import Exit, WhichstageError
from whichstage._util.files import shown


def ended(prog: str, error: BaseException, *, terminated: bool = False, again: str = "") -> int:
    """Print the one line a command ends with for `error` and return its exit code: a WhichstageError's own, a
    file that cannot be written (2), Ctrl-C (130) or SIGTERM (143), `again` said after an interruption (what
    to run to finish). Anything else is not the user's to read: it is raised again."""
    if isinstance(error, KeyboardInterrupt) or getattr(error, "interrupts", False):
        kept = f": {error}" if not isinstance(error, KeyboardInterrupt) and str(error) else ""
        line, code = f"{'terminated' if terminated else 'interrupted'}{kept}{again}", \
            Exit.TERMINATED if terminated else Exit.INTERRUPTED
    elif isinstance(error, WhichstageError):
        line, code = str(error), error.exit_code
    elif isinstance(error, OSError):
        where: Optional[str] = shown(error.filename) if error.filename else "output"
        line, code = f"{where}: cannot write: {error.strerror or error}", Exit.BAD_INPUT
    else:
        raise error
    print(visible(f"{prog}: {line}"), file=sys.stderr)
    return int(code)

"""The commands' exit codes and the error every command reports in one line (cli/run.py's EPILOG says what
each code means; _util/ending.py maps what ended a command to its line and code)."""
from enum import IntEnum


class Exit(IntEnum):
    DONE = 0
    REGRESSED = 1  # a regression against --check-baseline (calibrate: a judge below its agreement)
    BAD_INPUT = 2  # bad input, a stale recording, a file that cannot be written, a model that cannot be reached
    INCOMPLETE = 3  # a live run left incomplete: some calls still failed after retries
    INTERRUPTED = 130  # Ctrl-C
    TERMINATED = 143  # SIGTERM


EXIT_REGRESSED, EXIT_BAD_INPUT, EXIT_INCOMPLETE = Exit.REGRESSED, Exit.BAD_INPUT, Exit.INCOMPLETE
EXIT_INTERRUPTED, EXIT_TERMINATED = Exit.INTERRUPTED, Exit.TERMINATED


class WhichstageError(Exception):
    """An error a command reports as one line on stderr, exiting with `exit_code` (bad input unless a subclass
    says otherwise); the base of every error the package raises for its user."""
    exit_code: Exit = Exit.BAD_INPUT

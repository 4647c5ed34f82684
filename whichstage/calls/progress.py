"""A live run's progress on stderr: cases done, elapsed, ETA and the running counts of failing stages, and
the lines its calls log, one whole line at a time."""
import sys
import threading
from typing import Optional


def write_line(line: str) -> None:
    """One write per line: lines logged by concurrent calls must not interleave."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class Progress:
    """Cases done, elapsed, ETA and running counts of failing stages, on stderr; silent when not a terminal."""

    def __init__(self, total: int, label: str, quiet: bool = False):
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()
        self.bar = None
        if quiet or not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn, \
            TimeRemainingColumn

        self.bar = Bar(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[counts]}"),
                       console=Console(stderr=True), transient=False)
        self.task = self.bar.add_task(label, total=total, counts="")
        self.bar.start()

    def advance(self, outcome: Optional[str]) -> None:
        with self.lock:
            if outcome:
                self.counts[outcome] = self.counts.get(outcome, 0) + 1
            if not self.bar:
                return
            counts = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        self.bar.update(self.task, advance=1, counts=counts and f"failing: {counts}")

    def log(self, line: str) -> None:
        if self.bar:
            self.bar.console.print(line, markup=False, highlight=False)
        else:
            write_line(line)

    def close(self) -> None:
        if self.bar:
            self.bar.stop()


"""Running paid calls: a bounded pool, retries with backoff for transient failures, timing, progress.

Nothing here knows about cases or metrics; evaluate.py and calibrate.py hand it named units of work.
"""
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

MAX_ATTEMPTS = 5
FIRST_DELAY = 1.0
MAX_TOTAL_WAIT = 60.0
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}
TRANSIENT_NAMES = ("Timeout", "RateLimit", "ResourceExhausted", "ServiceUnavailable", "InternalServerError",
                   "ServerError", "ConnectError", "ConnectionError", "DeadlineExceeded", "TooManyRequests")
sleep = time.sleep  # tests replace it, so retries cost no real time


DEFAULT_CONCURRENCY = 4


def add_live_options(parser, calls: str) -> None:
    """--live, --rerecord, --concurrency and --quiet, the same for every command that records `calls`."""
    parser.add_argument("--live", action="store_true", help=f"make the {calls} that are not recorded yet")
    parser.add_argument("--rerecord", action="store_true", help=f"with --live: make every one of the {calls} again")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                        help=f"{calls} in flight at once (default {DEFAULT_CONCURRENCY})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def check_live_options(parser, args) -> None:
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if args.rerecord and not args.live:
        parser.error("--rerecord goes with --live")


class CallFailed(Exception):
    """A call that failed for good: not transient, or still failing after every retry."""


def status_of(error: BaseException) -> Optional[int]:
    """The HTTP status an SDK error carries, wherever that SDK keeps it."""
    for candidate in (error, getattr(error, "response", None)):
        for field in ("status_code", "code", "status"):
            value = getattr(candidate, field, None)
            if isinstance(value, int):
                return value
    return None


def is_transient(error: BaseException) -> bool:
    """Rate limits, 5xx, timeouts and dropped connections, anywhere in the exception's chain."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, (TimeoutError, ConnectionError)) or status_of(error) in TRANSIENT_STATUS:
            return True
        if any(name in type(error).__name__ for name in TRANSIENT_NAMES):
            return True
        error = error.__cause__ or error.__context__
    return False


def one_line(error: BaseException) -> str:
    text = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {text}"[:300]


def with_retries(name: str, call: Callable[[], Any], log: Callable[[str], None]) -> Any:
    """Call, retrying transient failures with exponential backoff and jitter, within MAX_ATTEMPTS and
    MAX_TOTAL_WAIT seconds of waiting; every retry is logged. Raises CallFailed when it gives up."""
    waited = 0.0
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return call()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as error:  # noqa: BLE001 - any SDK error is classified, then retried or reported
            if not is_transient(error):
                raise CallFailed(f"{name}: {one_line(error)}") from error
            delay = FIRST_DELAY * 2 ** (attempt - 1)
            delay += random.uniform(0, delay / 2)
            if attempt == MAX_ATTEMPTS or waited + delay > MAX_TOTAL_WAIT:
                raise CallFailed(f"{name}: {one_line(error)} (gave up after {attempt} attempts)") from error
            log(f"retry {attempt}/{MAX_ATTEMPTS - 1} for {name} in {delay:.1f}s: {one_line(error)}")
            sleep(delay)
            waited += delay


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = call()
    return value, round(time.perf_counter() - start, 3)


def injected_latency() -> None:
    """Benchmark only: DOCS_OFFLINE_LATENCY_MS makes each offline backend call wait, like a network call."""
    ms = os.environ.get("DOCS_OFFLINE_LATENCY_MS")
    if ms:
        time.sleep(float(ms) / 1000)


class Pool:
    """A bounded pool whose tasks may add tasks; `run()` returns when all are done.

    It waits on a count of unfinished tasks, so each task costs the same however many are queued.
    Ctrl-C (or SIGTERM, raised as KeyboardInterrupt) cancels what has not started and re-raises once the
    running calls return. A task's own bug stops the run and surfaces from `run()`."""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError("concurrency must be at least 1")
        self.executor = ThreadPoolExecutor(max_workers=workers)
        self.unfinished = 0
        self.failure: Optional[BaseException] = None
        self.changed = threading.Condition()

    def submit(self, task: Callable[[], Any]) -> None:
        with self.changed:
            self.unfinished += 1
        self.executor.submit(self._run, task)

    def _run(self, task: Callable[[], Any]) -> None:
        try:
            task()
        except BaseException as error:  # noqa: BLE001 - handed to run(), which re-raises it
            with self.changed:
                self.failure = self.failure or error
        finally:
            with self.changed:
                self.unfinished -= 1
                self.changed.notify_all()

    def run(self) -> None:
        try:
            with self.changed:
                while self.unfinished and self.failure is None:
                    self.changed.wait(timeout=0.5)  # a timeout keeps Ctrl-C deliverable to this thread
                if self.failure is not None:
                    raise self.failure
        except BaseException:
            self.executor.shutdown(wait=True, cancel_futures=True)
            raise
        self.executor.shutdown(wait=True)


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
            counts = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        if self.bar:
            self.bar.update(self.task, advance=1, counts=counts and f"failing: {counts}")

    def log(self, line: str) -> None:
        if self.bar:
            self.bar.console.print(line, markup=False, highlight=False)
        else:
            write_line(line)

    def close(self) -> None:
        if self.bar:
            self.bar.stop()

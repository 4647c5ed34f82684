"""Running paid calls: a bounded pool, retries with backoff for transient failures, timing, progress.

Nothing here knows about cases or metrics; evaluate.py and calibrate.py hand it named units of work.
"""
import contextvars
import os
import random
import re
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Optional

from whichstage.console import first_line

MAX_ATTEMPTS = 5
FIRST_DELAY = 1.0
MAX_TOTAL_WAIT = 60.0
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}
TRANSIENT_NAMES = ("Timeout", "RateLimit", "ResourceExhausted", "ServiceUnavailable", "InternalServerError",
                   "ServerError", "ConnectError", "ConnectionError", "DeadlineExceeded", "TooManyRequests",
                   # a connection dropped without an answer (httpx, httpcore: RemoteProtocolError, ReadError,
                   # WriteError; aiohttp: ServerDisconnectedError)
                   "RemoteProtocolError", "ReadError", "WriteError", "ServerDisconnected")
STOP_GRACE_S = 5.0  # after Ctrl-C or SIGTERM: how long the calls already running may take to land
SILENT_LIMIT = 3  # attempts of one kind in a row, of two calls or more, with no answer: its provider is silent


DEFAULT_CONCURRENCY = 4
MAX_CONCURRENCY = 64  # one thread a call: more only queues at the provider's rate limit


def add_live_options(parser, calls: str) -> None:
    """--live, --rerecord, --concurrency and --quiet, the same for every command that records `calls`."""
    parser.add_argument("--live", action="store_true", help=f"make the {calls} that are not recorded yet")
    parser.add_argument("--rerecord", action="store_true", help=f"with --live: make every one of the {calls} again")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                        help=f"{calls} in flight at once (default {DEFAULT_CONCURRENCY}, at most {MAX_CONCURRENCY})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def check_live_options(parser, args) -> None:
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        parser.error(f"--concurrency must be from 1 to {MAX_CONCURRENCY}")
    if args.rerecord and not args.live:
        parser.error("--rerecord goes with --live")


class CallFailed(Exception):
    """A call that failed for good: not transient, or still failing after every retry."""


class Stopped(KeyboardInterrupt):
    """Raised in a pool's worker once its run is stopped (Ctrl-C, SIGTERM): no call, retry included, starts
    after that, and an answer arriving after the run stopped waiting for it is dropped, not journaled."""


class Silent(Exception):
    """A request not sent: its kind of call's provider has not answered SILENT_LIMIT attempts in a row."""


class Guard:
    """A pool's run-wide state its calls read: the stop (set on an interruption), whether the run still waits
    for the calls running (`late` once it gave up on them), and for each kind of call the attempts with no
    answer since that kind's last answer, and the calls they were of."""

    def __init__(self):
        self.stop, self.late = threading.Event(), threading.Event()
        self.lock, self.silent = threading.Lock(), {}

    def note(self, kind: str, name: str, error: Optional[BaseException], answered: bool) -> None:
        """Note an attempt of call `name`: one whose request got no answer (a timeout, a failed connection)
        counts; an HTTP answer, an error's too, starts over; an attempt that sent nothing changes nothing."""
        with self.lock:
            if error is not None and no_answer(error):
                attempts, names = self.silent.get(kind, (0, frozenset()))
                self.silent[kind] = (attempts + 1, names | {name})
            elif answered or (error is not None and http_answer(error)):
                self.silent.pop(kind, None)

    def given_up(self, kind: str) -> bool:
        """SILENT_LIMIT attempts in a row got no answer, of two calls or more: not one request's problem."""
        with self.lock:
            attempts, names = self.silent.get(kind, (0, ()))
            return attempts >= SILENT_LIMIT and len(names) > 1


class Attempt:
    """One attempt of one call, as its requests see it: its kind, and whether a request got an HTTP answer."""

    def __init__(self, kind: str):
        self.kind, self.answered = kind, False


_guard: "contextvars.ContextVar[Optional[Guard]]" = contextvars.ContextVar("guard", default=None)
_attempt: "contextvars.ContextVar[Optional[Attempt]]" = contextvars.ContextVar("attempt", default=None)


def refuse_if_stopped() -> None:
    """Raise Stopped when the run of the calling worker has been stopped: before every attempt and request."""
    guard = _guard.get()
    if guard is not None and guard.stop.is_set():
        raise Stopped("stopped: no new call after an interruption")


def before_request(*_request: Any) -> None:
    """Every model client's check before each request it sends (an httpx request hook, `client_options()`):
    none once the run is stopped (Stopped), none of a kind of call whose provider is taken as silent."""
    refuse_if_stopped()
    guard, attempt = _guard.get(), _attempt.get()
    if guard is not None and attempt is not None and guard.given_up(attempt.kind):
        raise Silent(f"not sent: {SILENT_LIMIT} {attempt.kind} attempts in a row got no answer")


def answered(*_response: Any) -> None:
    """A request of the current attempt got an HTTP answer (an httpx response hook, `client_options()`)."""
    attempt = _attempt.get()
    if attempt is not None:
        attempt.answered = True


def client_options() -> dict:
    """httpx client arguments for a model client: before_request and answered as its event hooks."""
    return {"event_hooks": {"request": [before_request], "response": [answered]}}


def _pause(seconds: float) -> None:
    """Wait `seconds`, the backoff between attempts; cut short by the run's stop (Stopped)."""
    guard = _guard.get()
    if guard is None:
        time.sleep(seconds)
    elif guard.stop.wait(seconds):
        raise Stopped("stopped while waiting to retry")


sleep = _pause  # tests replace it, so retries cost no real time


def status_of(error: BaseException) -> Optional[int]:
    """The HTTP status an SDK error carries, wherever that SDK keeps it."""
    for candidate in (error, getattr(error, "response", None)):
        for field in ("status_code", "code", "status"):
            value = getattr(candidate, field, None)
            if isinstance(value, int):
                return value
    return None


def causes(error: Optional[BaseException]) -> Iterator[BaseException]:
    """The exception, then what caused it, and so on: SDKs wrap the HTTP error in their own."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def is_transient(error: BaseException) -> bool:
    """Rate limits, 5xx, timeouts and dropped connections, anywhere in the exception's chain."""
    for cause in causes(error):
        if isinstance(cause, (TimeoutError, ConnectionError)) or status_of(cause) in TRANSIENT_STATUS:
            return True
        if any(name in type(cause).__name__ for name in TRANSIENT_NAMES):
            return True
    return False


def _seconds(value: Any) -> Optional[float]:
    """A Retry-After value: delay seconds, or an HTTP date (seconds from now)."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


_RETRY_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retry_info(details: Any) -> Optional[float]:
    """Google's RetryInfo in an error body: {"error": {"details": [{"@type": ".../google.rpc.RetryInfo",
    "retryDelay": "37s"}]}}; google-genai keeps that body on `error.details`."""
    body = details.get("error", details) if isinstance(details, dict) else None
    for item in (body or {}).get("details") or []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            found = _RETRY_DELAY.match(str(item.get("retryDelay", "")))
            if found:
                return float(found.group(1))
    return None


def retry_after(error: BaseException) -> Optional[float]:
    """Seconds the server asked to wait before another attempt, or None: a Retry-After header on the HTTP
    response an error carries (google-genai keeps it on `error.response`, under the SDK's own wrapper), else
    Google's RetryInfo delay in the error body."""
    for cause in causes(error):
        headers = getattr(getattr(cause, "response", None), "headers", None)
        if headers is not None and hasattr(headers, "get"):
            seconds = _seconds(headers.get("retry-after") or headers.get("Retry-After"))
            if seconds is not None:
                return seconds
        seconds = _retry_info(getattr(cause, "details", None))
        if seconds is not None:
            return seconds
    return None


def http_answer(error: BaseException) -> bool:
    """The error carries an HTTP status, anywhere in its chain: the provider answered, if with an error."""
    return any(status_of(cause) is not None for cause in causes(error))


def no_answer(error: BaseException) -> bool:
    """A transient failure with no HTTP answer (a timeout, a failed connection): the provider said nothing."""
    return is_transient(error) and not http_answer(error)


def api_error(error: BaseException) -> Optional[BaseException]:
    """The Google API error (google-genai's APIError: an int `code`, a `status` and a `message`) in the chain."""
    return next((c for c in causes(error) if isinstance(getattr(c, "code", None), int)
                 and isinstance(getattr(c, "status", None), str) and isinstance(getattr(c, "message", None), str)),
                None)


def one_line(error: BaseException) -> str:
    """The error's type and first line; a Google API error as its code, status and message rather than the
    whole JSON body its text repeats."""
    from whichstage.redact import outside_text

    api = api_error(error)
    line = first_line(error) if api is None else \
        f"{type(error).__name__}: " + " ".join(f"{api.code} {api.status}: {api.message}".split())
    return outside_text(line)[:300]  # no key or password reaches a line or a journal


def with_retries(name: str, call: Callable[[], Any], log: Callable[[str], None]) -> Any:
    """Call, retrying transient failures with exponential backoff and jitter, within MAX_ATTEMPTS and
    MAX_TOTAL_WAIT seconds of waiting; every retry is logged. A server's Retry-After is waited exactly, and
    gives up at once when it is more than the budget has left. Raises CallFailed when it gives up. In a pool,
    no attempt starts once the run is stopped (Stopped), and no request is sent once SILENT_LIMIT attempts in
    a row of this kind of call (the name's first part: agent, judge, ladder), of two calls or more, got no
    answer (Silent, never retried)."""
    guard, kind, waited = _guard.get(), name.split("/", 1)[0], 0.0
    for attempt in range(1, MAX_ATTEMPTS + 1):
        refuse_if_stopped()
        this = Attempt(kind)
        token = _attempt.set(this)
        try:
            value = call()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as error:  # noqa: BLE001 - any SDK error is classified, then retried or reported
            refuse_if_stopped()  # a client's refusal, however its SDK wrapped it, is the stop
            silent = next((c for c in causes(error) if isinstance(c, Silent)), None)
            if silent is not None:
                raise CallFailed(f"{name}: {silent}") from error
            if guard is not None:
                guard.note(kind, name, error, this.answered)
            if not is_transient(error):
                raise CallFailed(f"{name}: {one_line(error)}") from error
            delay = _retry_delay(name, error, attempt, waited)
            log(f"retry {attempt}/{MAX_ATTEMPTS - 1} for {name} in {delay:.1f}s"
                f"{' (Retry-After)' if retry_after(error) is not None else ''}: {one_line(error)}")
            sleep(delay)
            waited += delay
            continue
        finally:
            _attempt.reset(token)
        if guard is not None:
            if guard.late.is_set():
                raise Stopped("answered after the run stopped waiting")
            guard.note(kind, name, None, this.answered)
        return value


def _retry_delay(name: str, error: BaseException, attempt: int, waited: float) -> float:
    """The wait before the next attempt; CallFailed when there is none within MAX_ATTEMPTS and MAX_TOTAL_WAIT."""
    asked = retry_after(error)
    if asked is None:
        delay = FIRST_DELAY * 2 ** (attempt - 1)
        delay += random.uniform(0, delay / 2)
    else:
        delay = asked
    gave_up = f"gave up after {attempt} attempt{'s' if attempt > 1 else ''}"
    if attempt < MAX_ATTEMPTS and asked is not None and waited + asked > MAX_TOTAL_WAIT:
        raise CallFailed(f"{name}: {one_line(error)} (the server asked to retry after {asked:g}s, more "
                         f"than the {MAX_TOTAL_WAIT - waited:g}s left of the {MAX_TOTAL_WAIT:g}s "
                         f"retry budget: {gave_up})") from error
    if attempt == MAX_ATTEMPTS or waited + delay > MAX_TOTAL_WAIT:
        raise CallFailed(f"{name}: {one_line(error)} ({gave_up})") from error
    return delay


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = call()
    return value, round(time.perf_counter() - start, 3)


def injected_latency() -> None:
    """Benchmark only: DOCS_OFFLINE_LATENCY_MS makes each offline backend call wait, like a network call."""
    ms = os.environ.get("DOCS_OFFLINE_LATENCY_MS")
    if ms:
        time.sleep(float(ms) / 1000)


def locked_once(build: Callable):
    """A factory that builds its model once, even when several threads ask at the same time."""
    lock, built = threading.Lock(), []

    def get():
        with lock:
            if not built:
                built.append(build())
            return built[0]
    return get


class Pool:
    """A bounded pool whose tasks may add tasks; `run()` returns when all are done.

    Work starts only from `run()`, on the calling thread, and never more than `workers` tasks at once: tasks
    added by running tasks first, then the next of `feed()`'s tasks, drawn lazily, so memory stays flat in
    the number of cases. Ctrl-C (or SIGTERM, raised as KeyboardInterrupt) wherever it lands in `run()`
    stops the run: tasks added from then on are dropped, no call starts (`with_retries` and every client's
    request hook read the pool's Guard), the calls already running get STOP_GRACE_S to land, and it
    re-raises; a call still waiting on its provider then is left behind, on a daemon thread that ends with the
    process. A task's own bug stops the run the same way and surfaces from `run()`."""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError("concurrency must be at least 1")
        import collections

        self.workers, self.running, self.stopped = workers, 0, False
        self.added: "collections.deque[Callable[[], Any]]" = collections.deque()
        self.fed: Iterator[Callable[[], Any]] = iter(())
        self.failure: Optional[BaseException] = None
        self.changed = threading.Condition()
        self.guard = Guard()

    def submit(self, task: Callable[[], Any]) -> None:
        """Add a task; after an interruption it is dropped, so no new call starts."""
        with self.changed:
            if not self.stopped:
                self.added.append(task)
                self.changed.notify_all()

    def feed(self, tasks: Iterable[Callable[[], Any]]) -> None:
        """Tasks to draw one at a time, when a worker is free and no added task waits."""
        self.fed = iter(tasks)

    def _run(self, task: Callable[[], Any]) -> None:
        _guard.set(self.guard)  # this thread's own context: its calls, and threads copying it, read the guard
        try:
            task()
        except BaseException as error:  # noqa: BLE001 - handed to run(), which re-raises it
            with self.changed:
                self.failure = self.failure or error
        finally:
            with self.changed:
                self.running -= 1
                self.changed.notify_all()

    def _next(self) -> Optional[Callable[[], Any]]:
        """The next task to start, or None when there is none now (called holding `changed`)."""
        if self.added:
            return self.added.popleft()
        return next(self.fed, None)

    def run(self) -> None:
        try:
            with self.changed:
                while self.failure is None:
                    while self.running < self.workers:
                        task = self._next()
                        if task is None:
                            break
                        self.running += 1
                        threading.Thread(target=self._run, args=(task,), daemon=True).start()
                    if not self.running and not self.added:
                        break
                    self.changed.wait(timeout=0.5)  # a timeout keeps Ctrl-C deliverable to this thread
                if self.failure is not None:
                    raise self.failure
        except BaseException:
            self._stop()
            raise

    def _stop(self) -> None:
        """Start nothing more; wait up to STOP_GRACE_S for the tasks running, then stop waiting for them."""
        self.guard.stop.set()
        deadline = time.monotonic() + STOP_GRACE_S
        with self.changed:
            self.stopped = True
            self.added.clear()
            while self.running and time.monotonic() < deadline:
                self.changed.wait(timeout=deadline - time.monotonic())
            if self.running:
                self.guard.late.set()


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


class SigtermAsInterrupt:
    """SIGTERM, as CI sends when a job is cancelled, raised as Ctrl-C is, so a live run keeps what it paid
    for; true once it has arrived. Only the main thread may set a handler; `restore()` puts the old one back."""

    def __init__(self):
        import signal
        import threading

        self.arrived, self.previous = False, None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum, frame) -> None:
        self.arrived = True
        raise KeyboardInterrupt("terminated")

    def __bool__(self) -> bool:
        return self.arrived

    def restore(self) -> None:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)

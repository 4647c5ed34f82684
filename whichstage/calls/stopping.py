"""When a live run's calls must not be made: after Ctrl-C or SIGTERM (the stop), or to a provider taken as
silent. A pool's Guard holds that state; every attempt and every client request reads it from its context."""
import contextvars
import threading
import time
from typing import Any, Optional

from whichstage.calls.errors import http_answer, no_answer

SILENT_LIMIT = 3  # attempts of one kind in a row, of two calls or more, with no answer: its provider is silent


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


current_guard: "contextvars.ContextVar[Optional[Guard]]" = contextvars.ContextVar("guard", default=None)
current_attempt: "contextvars.ContextVar[Optional[Attempt]]" = contextvars.ContextVar("attempt", default=None)


def refuse_if_stopped() -> None:
    """Raise Stopped when the run of the calling worker has been stopped: before every attempt and request."""
    guard = current_guard.get()
    if guard is not None and guard.stop.is_set():
        raise Stopped("stopped: no new call after an interruption")


def before_request(*_request: Any) -> None:
    """Every model client's check before each request it sends (an httpx request hook, `client_options()`):
    none once the run is stopped (Stopped), none of a kind of call whose provider is taken as silent."""
    refuse_if_stopped()
    guard, attempt = current_guard.get(), current_attempt.get()
    if guard is not None and attempt is not None and guard.given_up(attempt.kind):
        raise Silent(f"not sent: {SILENT_LIMIT} {attempt.kind} attempts in a row got no answer")


def answered(*_response: Any) -> None:
    """A request of the current attempt got an HTTP answer (an httpx response hook, `client_options()`)."""
    attempt = current_attempt.get()
    if attempt is not None:
        attempt.answered = True


def client_options(http: Any = None) -> dict:
    """httpx client arguments for a model client's sync client: before_request and answered as its event hooks,
    and a transport that serves the requests the run's recording holds instead of paying for them again
    (whichstage/recording/transport.py). `http` is the client's module, httpx unless it says (the openai and
    anthropic SDKs
    take httpx2's)."""
    return {"event_hooks": {"request": [before_request], "response": [answered]}, **reusing(http)}


def reusing(http: Any = None) -> dict:
    """The transport alone (whichstage/recording/transport.py), for a client whose arguments reach its async client
    too."""
    from whichstage.recording.transport import transport_class  # httpx: a replay builds no client, and need not load it

    if http is None:
        import httpx as http
    return {"transport": transport_class(http)(refuse_if_stopped)}


def pause(seconds: float) -> None:
    """Wait `seconds`, the backoff between attempts; cut short by the run's stop (Stopped)."""
    guard = current_guard.get()
    if guard is None:
        time.sleep(seconds)
    elif guard.stop.wait(seconds):
        raise Stopped("stopped while waiting to retry")


class SigtermAsInterrupt:
    """SIGTERM, as CI sends when a job is cancelled, raised as Ctrl-C is, so a live run keeps what it paid
    for; true once it has arrived. Only the main thread may set a handler; `restore()` puts the old one back."""

    def __init__(self):
        import signal

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

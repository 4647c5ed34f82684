"""Making one live call: retried with backoff and jitter while its failures are transient, within a budget
of attempts and waiting; timed. The pool, the stop and the progress it runs under live in pool.py,
stopping.py and progress.py; nothing here knows about cases or metrics.
"""
import os
import random
import time
from typing import Any, Callable

from whichstage.calls.errors import causes, is_transient, one_line, retry_after
from whichstage.model.errors import InputError
from whichstage.calls.stopping import Attempt, Silent, Stopped, current_attempt, current_guard, pause, refuse_if_stopped


MAX_ATTEMPTS = 5
FIRST_DELAY = 1.0
MAX_TOTAL_WAIT = 60.0


class CallFailed(Exception):
    """A call that failed for good: not transient, or still failing after every retry."""


sleep = pause  # tests replace it, so retries cost no real time


def with_retries(name: str, call: Callable[[], Any], log: Callable[[str], None]) -> Any:
    """Call, retrying transient failures with exponential backoff and jitter, within MAX_ATTEMPTS and
    MAX_TOTAL_WAIT seconds of waiting; every retry is logged. A server's Retry-After is waited exactly, and
    gives up at once when it is more than the budget has left. Raises CallFailed when it gives up. In a pool,
    no attempt starts once the run is stopped (Stopped), and no request is sent once SILENT_LIMIT attempts in
    a row of this kind of call (the name's first part: agent, judge, ladder), of two calls or more, got no
    answer (Silent, never retried)."""
    guard, kind, waited = current_guard.get(), name.split("/", 1)[0], 0.0
    for attempt in range(1, MAX_ATTEMPTS + 1):
        refuse_if_stopped()
        this = Attempt(kind)
        token = current_attempt.set(this)
        try:
            value = call()
        except (KeyboardInterrupt, SystemExit, InputError):  # bad input (a factory that raised) ends the run
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
            current_attempt.reset(token)
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


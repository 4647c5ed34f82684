"""The bounded pool a live run's calls run in: tasks that may add tasks, drawn lazily, stopped as one on
Ctrl-C or a task's own bug; and a model built once for all its threads."""
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Optional

from whichstage.calls.stopping import Guard, current_guard

DEFAULT_CONCURRENCY = 4
MAX_CONCURRENCY = 64  # one thread a call: more only queues at the provider's rate limit
STOP_GRACE_S = 5.0  # after Ctrl-C or SIGTERM: how long the calls already running may take to land


def locked_once(build: Callable):
    """A factory that builds its model once, even when several threads ask at the same time."""
    lock = threading.Lock()
    built: list[Any] = []  # the model, once built

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
        current_guard.set(self.guard)  # this thread's own context: its calls, and threads copying it, read the guard
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



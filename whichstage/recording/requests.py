"""The requests a live run's paid calls sent, kept in the recording beside its entries: each by the hash of its
content (recording/transport.py), with what came back and the entries that used it. A request the recording or
this run already holds is served from here, free; one sent twice at once is paid once (the second waits for
the first); the requests of entries that are dropped are dropped with them when the recording is saved."""
import contextvars
import json
import threading
from collections import Counter, defaultdict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

KINDS = ("chat", "embedding", "judge")

# The run's requests and the entry whose call is running, read by the transport of every model client.
current: "contextvars.ContextVar[Optional[tuple[Requests, str]]]" = contextvars.ContextVar("serving", default=None)


def kind_of(entry: str, path: str) -> str:
    """A request's kind as the plan and the summary count it: an embedding (by its URL), else the judge's or
    the chat model's, by the entry that sent it."""
    if "embed" in path.lower():
        return "embedding"
    return "judge" if entry.startswith("judge/") else "chat"


PIPELINE_KINDS = ("agent", "tools", "judge", "ladder", "index")
AGAIN = "#again"  # a verdict judged again (`judge/<case>/<stage>#again`): the same request, asked anew


def repeat_of(entry: str) -> str:
    """The run number of an entry repeated on purpose ('#2'; '' for the first run), which keys its requests
    apart, so a repeat is never served a sibling's answer: a case's run under --repeats (`agent/<case>#2`,
    `judge/<case>#2/<metric>`), a verdict judged again (`judge/<case>/<stage>#again`), a calibration score's
    (`<case>/<i>`, the i-th from 0)."""
    kind, _, rest = entry.partition("/")
    if kind not in PIPELINE_KINDS:
        number = entry.rsplit("/", 1)[-1]
        return f"#{int(number) + 1}" if number.isdigit() and number != "0" else ""
    case = rest.split("/")[0]
    again = AGAIN if rest.endswith(AGAIN) else ""
    return ("#" + case.rsplit("#", 1)[1] if "#" in case else "") + again


def well_formed(item: Any) -> bool:
    """A recorded request as a live run writes it: its status, its body as JSON or text, its entries."""
    return isinstance(item, dict) and isinstance(item.get("entries"), list) and "status" in item \
        and ("json" in item or "text" in item)


def union(parts: list[dict[str, Any]], kept: set[str]) -> tuple[dict[str, dict], list[str]]:
    """The requests of the recordings of one run's shards (in shard order) as one run would keep them: each with
    the entries in `kept` that used it in any shard, sorted; one no kept entry used, or not well formed, is
    dropped. A request two shards got different answers to (a model that does not answer the same twice)
    keeps the first's, as one run serves a request asked twice its first answer; their keys are returned too."""
    requests = Requests({}, {}, True, lambda line: None)
    differ = []
    for part in parts:
        for key, item in part.items():
            if not well_formed(item):
                continue
            record = {k: v for k, v in item.items() if k != "entries"}
            if requests.answers.setdefault(key, record) != record:
                differ.append(key)
            requests.tags[key].update(e for e in item["entries"] if isinstance(e, str))
    return requests.to_write(kept), sorted(set(differ))


class Flight:
    """A request on its way: those asking the same wait for its record (None when it could not be kept)."""

    def __init__(self):
        self.done, self.record = threading.Event(), None


class Requests:
    """A live run's requests: the file's (`recorded`, each as its text until used; served unless the run is a
    --rerecord), the journal's and this run's (`answers`, always served), and the entries of this run that
    used each (`tags`). `journal(line)` appends a line to the recording's journal."""

    def __init__(self, recorded: dict[str, Any], answers: dict[str, dict], serve_recorded: bool,
                 journal: Callable[[dict], None]):
        self.recorded, self.answers, self.serve_recorded, self.journal = recorded, answers, serve_recorded, journal
        self.tags: dict[str, set[str]] = defaultdict(set)
        self.flights: dict[str, Flight] = {}
        self.sent_by: dict[str, list[str]] = defaultdict(list)
        self.paid: Counter = Counter()
        self.served: Counter = Counter()
        self.lock = threading.Lock()

    def known(self, key: str) -> Optional[dict]:
        """The record of a request already answered, or None (call with the lock held)."""
        found = self.answers.get(key)
        if found is None and self.serve_recorded:
            found = self.parsed(key)
        return found

    def parsed(self, key: str) -> Optional[dict]:
        """The file's request, parsed once; one that cannot be read (edited by hand) is as if not recorded:
        it is sent again, and not written back."""
        item = self.recorded.get(key)
        if isinstance(item, str):
            try:
                item = json.loads(item)
            except (ValueError, RecursionError):
                item = None
        if item is not None and not well_formed(item):  # a file read whole holds its requests parsed
            item = None
        if item is None:
            self.recorded.pop(key, None)
        else:
            self.recorded[key] = item
        return item

    def take(self, key: str, entry: str, kind: str, send: Callable[[], tuple[Any, Optional[dict]]],
             wait: Callable[[], None]) -> tuple[Optional[dict], Any]:
        """(record, None) for a request served, or (None, response) for one sent by `send()`, which returns the
        response and its record (None when it is not to be kept: an error). A request already on its way is
        waited for (`wait()` runs between looks: it raises once the run is stopped)."""
        with self.lock:
            found = self.known(key)
            flight = None if found is not None else self.flights.get(key)  # another call's, on its way
            owned = Flight() if found is None and flight is None else None  # this call's: it sends the request
            if owned is not None:
                self.flights[key] = owned
        if flight is not None:
            while not flight.done.wait(0.25):
                wait()
            found = flight.record
        if found is not None:
            with self.lock:
                self.tags[key].add(entry)
                self.served[kind] += 1
            return found, None
        try:
            response, record = send()
            with self.lock:
                self.paid[kind] += 1
                if record is not None:
                    self.answers[key] = record
                    self.tags[key].add(entry)
                    self.sent_by[entry].append(key)
            if record is not None:
                self.journal({"request": key, "entries": [entry], **record})
            if owned is not None:
                owned.record = record
            return None, response
        finally:
            if owned is not None:
                with self.lock:
                    self.flights.pop(key, None)
                owned.done.set()

    @contextmanager
    def serving(self, entry: str) -> Iterator[None]:
        """Requests sent while the block runs are `entry`'s. A call that fails (not an interruption) forgets the
        requests it paid for, so the next attempt asks the provider again rather than being served the answer
        that failed (blocked, not the JSON asked for)."""
        token = current.set((self, entry))
        try:
            yield
        except Exception:
            self.forget(entry)
            raise
        finally:
            current.reset(token)

    def forget(self, entry: str) -> None:
        with self.lock:
            keys = self.sent_by.pop(entry, [])
            for key in keys:
                self.answers.pop(key, None)
                self.tags.pop(key, None)
        if keys:
            self.journal({"forget": keys})

    def said(self) -> str:
        """What this run's requests cost, for the line that ends a live run: '; requests: 12 paid (chat 4,
        judge 8), 30 served from the recording or this run (...)'; '' when it sent none through a client."""
        with self.lock:
            paid, served = Counter(self.paid), Counter(self.served)
        if not paid and not served:
            return ""

        def by_kind(counts: Counter) -> str:
            kinds = ", ".join(f"{kind} {counts[kind]}" for kind in KINDS if counts[kind])
            return f"{counts.total()}" + (f" ({kinds})" if kinds else "")
        return f"; requests: {by_kind(paid)} paid, {by_kind(served)} served from the recording or this run"

    def to_write(self, kept: set[str]) -> dict[str, dict]:
        """The requests the saved recording keeps, sorted by key: each with the entries kept that used it, in
        this run or (unless a --rerecord) before it; a request no kept entry used is dropped."""
        out = {}
        with self.lock:
            keys = set(self.answers) | set(self.tags) | (set(self.recorded) if self.serve_recorded else set())
            for key in sorted(keys):
                record = self.answers.get(key) or self.parsed(key)
                if record is None:
                    continue
                used = sorted((set(record.get("entries", ())) | self.tags.get(key, set())) & kept)
                if used:
                    out[key] = {**record, "entries": used}
        return out

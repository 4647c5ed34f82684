"""The recording loop of a live run, a scheduler: every missing or stale entry computed with bounded
concurrency, a case's judge calls starting as soon as its trace exists, and each call's failure kept for its
row. It returns what it recorded; the pipeline (whichstage/run/pipeline.py) builds the report."""
import threading
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Optional, Protocol, cast

from whichstage.recording.store import ABSENT, Cassette
from whichstage.run.entries import EXPECTED_CALLS, EXPECTED_PAGES, Inputs, agent_entry, case_entries, repeat
from whichstage.run.ladder import Rankers
from whichstage.calls.retries import CallFailed, timed, with_retries
from whichstage.calls.pool import Pool
from whichstage.calls.progress import write_line
from whichstage.run.rows import answer_checks, case_row, expected_calls, intervention_checks, rechecks
from whichstage.scoring.diagnosis import answer_stage
from whichstage.agent.reading import Unreadable
from whichstage.model.dicts import CallDict, CaseDict, RowDict, TraceDict


class ProgressLike(Protocol):
    """What a run tells as it goes: calls.progress.Progress, or Quiet."""

    def advance(self, outcome: Optional[str]) -> None: ...

    def log(self, line: str) -> None: ...

    def close(self) -> None: ...


class Quiet:
    """Progress that says only what must be said: retries and errors, on stderr."""

    def advance(self, outcome):
        pass

    def log(self, line: str) -> None:
        write_line(line)

    def close(self):
        pass


def run_agent(agent, question: str, history: Optional[list[dict]] = None,
              made: Optional[list[CallDict]] = None) -> TraceDict:
    """One agent run's trace, with its time; a case with `history` is its last turn after those; `made`, the
    calls the tools intervention makes for it first."""
    from whichstage.agent.capture import run

    trace, took = timed(lambda: run(agent, question, history, made))
    return cast(TraceDict, {**trace, "agent_s": took})  # the agent's run, captured in the trace's shape


def constant(value: Any) -> Callable[[], Any]:
    """A compute that gives `value`: a batch's answer, recorded as any computed value is."""
    return lambda: value


@dataclass
class Live:
    """What a live run calls and how: the models, each built on its first call (`counterfactual_agent(case)`
    searches the case's expected pages), the judge's batch API if any, the calls in flight and the progress."""
    judge: Callable[[], object] = lambda: None
    agent: Callable[[], object] = lambda: None
    counterfactual_agent: Optional[Callable[[CaseDict], object]] = None
    batch: Optional[Callable[[list], dict]] = None
    concurrency: int = 1
    progress: ProgressLike = field(default_factory=Quiet)


@dataclass
class Recorded:
    """What a live run did: the error of each case whose calls still failed after retries, and the rows of the
    cases it found complete (every entry recorded and current), which it did not schedule."""
    errors: dict[str, str]
    rows: dict[str, RowDict]


def collect(inputs: Inputs, cassette: Cassette, live: Live, repeats: int = 1) -> Recorded:
    """Compute every missing entry with at most `live.concurrency` calls at once. A failing case then pays for
    its intervention (scoring/diagnosis.py): failing at retrieval it runs again with `live.counterfactual_agent`,
    at tools with its expected calls made, at an answer stage (or its intervention's run there) its answer
    check. With `repeats`,
    every case runs that many times, each run judged. With `live.batch(jobs)`, the judged metrics wait until
    the agents are done and are measured together (whichstage/run/batch.py: [(name, measure)] -> name -> value or
    exception), then any counterfactual runs they call for, and so on."""
    progress = live.progress
    done: dict[str, RowDict] = {}  # case id -> its row, for the cases found complete
    pool, lock = Pool(live.concurrency), threading.Lock()
    errors: dict[str, str] = {}  # case id -> its first error
    left: dict[str, int] = {}  # case id -> its entries not finished yet
    second: set[str] = set()  # the cases whose counterfactual run was submitted
    checked: set[str] = set()  # the cases whose answer check was submitted
    made: set[str] = set()  # the cases whose run with the expected calls made was submitted
    deferred: list[tuple[CaseDict, str, Callable, Callable]] = []  # the judge steps a batch measures

    def record(name: str, deps_of: Callable, compute: Callable[[], Any]) -> tuple[Any, Optional[str]]:
        """The entry's value, or the error that stopped it after retries (logged, and kept for the row)."""
        try:
            return cassette.get(name, deps_of, lambda: with_retries(name, compute, progress.log)), None
        except CallFailed as e:
            progress.log(f"error: {e}")
            return None, str(e)

    def finish(case: CaseDict, error: Optional[str]) -> None:
        cid = case["id"]
        with lock:
            if error:
                errors.setdefault(cid, error)
            left[cid] -= 1
            if left[cid]:
                return
        row = case_row(inputs, case, cassette, error=errors.get(cid))
        first = row["first_failure"]
        if first == "retrieval" and live.counterfactual_agent and cid not in second:
            if submit(case, second, [partial(agent_step, case, EXPECTED_PAGES)]):
                return
        calls = expected_calls(inputs, case, row)[0] if first == "tools" and cid not in made else None
        if calls is not None and submit(case, made, [partial(agent_step, case, EXPECTED_CALLS, calls)]):
            return
        if cid not in checked:  # the answer check of the case's own run, or of an intervention's run that failed
            needed = intervention_checks(inputs, case, cassette, row) if cid in second or cid in made \
                else own_answer_checks(case, row)
            if submit(case, checked, [partial(judge_step, case, n, d, c) for n, (d, c) in needed.items()]):
                return
        progress.advance(first)

    def submit(case: CaseDict, marks: set[str], tasks: list[Callable[[], None]]) -> bool:
        """Mark the case in `marks`, count `tasks` among its entries left and hand them to the pool; False
        when there are none."""
        if not tasks:
            return False
        with lock:
            marks.add(case["id"])
            left[case["id"]] += len(tasks)
        for task in tasks:
            pool.submit(task)
        return True

    def own_answer_checks(case: CaseDict, row: RowDict) -> dict:
        """The answer check and the recheck of the verdict in doubt the case's own run still needs."""
        if not answer_stage(row["first_failure"]) and row["first_failure"] != "behaviour":
            return {}
        trace = cassette.lookup(agent_entry(case), inputs.agent_deps(case))[0]
        view = inputs.view(trace)
        needed = {**answer_checks(inputs, case, row, view["context"]),
                  **rechecks(inputs, case, row, case_entries(inputs, case, trace, "", view))}
        return {name: need for name, need in needed.items() if cassette.lookup(name, need[0])[0] is ABSENT}

    def judge_step(case: CaseDict, name: str, deps_of: Callable, compute: Callable) -> None:
        if live.batch is not None and name.startswith("judge/") and not cassette.has(name):
            if cassette.lookup(name, deps_of)[0] is ABSENT:
                with lock:
                    deferred.append((case, name, deps_of, compute))
                return  # measured with the others, in rounds
        finish(case, record(name, deps_of, lambda: compute(live.judge()))[1])

    def judge_deferred() -> None:
        jobs = list(deferred)
        found: dict[str, Any] = {}
        deferred.clear()
        if jobs:  # judge_step defers only with a batch
            found = cast(Callable[[list], dict], live.batch)([(name, compute) for _, name, _, compute in jobs])
        for case, name, deps_of, _ in jobs:
            value = found.get(name)
            if isinstance(value, BaseException):
                progress.log(f"error: {name}: {value}")
                finish(case, f"{name}: {value}")
            else:
                finish(case, record(name, deps_of, constant(value))[1])

    def agent_step(case: CaseDict, variant: str = "", calls: Optional[list[CallDict]] = None) -> None:
        if variant == EXPECTED_PAGES:
            # finish submits a counterfactual run only when there is a counterfactual agent
            counterfactual = cast(Callable[[CaseDict], object], live.counterfactual_agent)
            deps, build = inputs.agent_deps(case, inputs.expected_pages(case)), lambda: counterfactual(case)
        else:
            deps, build = inputs.agent_deps(case, None, calls), live.agent
        trace, error = record(agent_entry(case, variant), deps,
                              lambda: run_agent(build(), case["question"], case.get("history"), calls))
        if trace is None:
            return finish(case, error)  # a failed counterfactual run is the case's error, as any failed call
        try:
            needed = case_entries(inputs, case, cast(TraceDict, trace), variant)
        except Unreadable as e:  # the trace is kept; its row says what could not be read
            progress.log(f"error: {agent_entry(case, variant)}: {e}")
            return finish(case, f"{agent_entry(case, variant)}: {e}")
        with lock:
            left[case["id"]] += len(needed)
        for name, (deps_of, compute) in needed.items():
            pool.submit(partial(judge_step, case, name, deps_of, compute))
        finish(case, None)

    def current_row(case: CaseDict) -> Optional[RowDict]:
        """The row of a case whose every entry is recorded and current: nothing to call, nothing to redo."""
        if repeats > 1:
            return None
        missing: dict = {}
        row = case_row(inputs, case, cassette, stale=missing)
        return None if missing else row

    rankers = Rankers(inputs)  # the retrieval ladder's rankings: no trace needed

    def tasks():
        """Each case's runs and rankings, drawn by the pool one at a time as workers free up."""
        for case in inputs.cases["cases"]:
            row = current_row(case)
            if row is not None:
                done[case["id"]] = row
                progress.advance(row["first_failure"])
                continue
            rungs = rankers.entries(case)
            with lock:
                left[case["id"]] = repeats + len(rungs)
            for variant in [""] + [repeat(r) for r in range(2, repeats + 1)]:
                yield lambda c=case, v=variant: agent_step(c, v)
            for name, (deps_of, compute) in rungs.items():
                yield lambda c=case, n=name, d=deps_of, f=compute: finish(c, record(n, d, f)[1])

    pool.feed(tasks())
    pool.run()
    while live.batch is not None and (deferred or pool.added):
        judge_deferred()  # may call for counterfactual runs: the next phase runs them, then their metrics
        if pool.added:
            waiting, pool = list(pool.added), Pool(live.concurrency)
            for task in waiting:
                pool.submit(task)
            pool.run()
    return Recorded(errors, done)

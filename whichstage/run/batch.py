"""`--live --batch`: the judge's calls through its provider's Batch API, in rounds, at the batch price. A
provider is a small class (PROVIDERS: batch_gemini.py's, batch_openai.py's, batch_anthropic.py's) that builds a
request, creates a job, gets it, says how it ended, reads its answers and names DeepEval's model class for the
judge.

DeepEval's metrics ask the judge several times in sequence (truths and claims, then verdicts, then a reason),
so every pending metric runs at once on DeepEval's async path, and the judge's `a_generate` only queues its
request: once every running metric waits on one, the round's requests go out as one batch, polled until done,
and each answer goes back to the metric that asked (for Gemini: `batches.create` with inline requests, then
`batches.get`; for OpenAI: a JSONL file uploaded, a batch created on it, polled, its output file read; for
Anthropic: a message batch created, polled until it has ended, its results streamed). Rounds
follow until every metric has its score. Agent runs stay interactive: each step of an agent depends on the last.

Nothing paid is sent twice: the journal beside the recording (`.NAME.batch.jsonl`) gets each job's name and
request keys when it is submitted and each answer as it arrives, so a killed run polls the jobs it already
submitted, and a request whose answer is journaled is answered from it. A request is keyed by the model, the
prompt and the schema's JSON schema. A failed, expired or partly failed batch makes only the metrics that
asked in it errors, each naming the job and what failed; the next run asks those requests again (a failed
request is not billed), and the journal is removed once the recording holds every answer.

Every create and get is retried as every paid call is (live_calls: transient failures, backoff, Retry-After),
waiting on the event loop, so a stop cancels the wait and starts no request. A call that fails for good, or a
job still running after WAIT_S of polling in this run, makes its requests errors, one line each; the job stays
journaled for the next run to poll. A journaled job the server no longer knows (404) leaves the journal with
one line, and its requests are asked again. Every message from the server is scrubbed (redact.outside_text).
"""
import asyncio
import contextvars
import hashlib
import importlib
import json
import random
import sys
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

from whichstage.calls import retries as live_calls
from whichstage.calls.errors import status_of
from whichstage.calls.retries import CallFailed
from whichstage.calls.errors import one_line
from whichstage.providers.names import model_of, provider_of
from whichstage.providers.settings import env_seconds
from whichstage.recording.requests import repeat_of
from whichstage._util.redact import outside_text

POLL_S = 10.0  # between batches.get calls: a batch takes minutes to hours
WAIT_S = 86400.0  # a job's polling in one run: Gemini's target turnaround for a batch is 24 hours
POLL_VARIABLE, WAIT_VARIABLE = "DOCS_BATCH_POLL_S", "DOCS_BATCH_WAIT_S"  # set others
BATCH_DISCOUNT = 0.5  # Gemini's, OpenAI's and Anthropic's published batch price: half the interactive one
# The judge's provider -> its batch class, "module:Class" under whichstage.
PROVIDERS = {"google_genai": "run.batch_gemini:GeminiBatches", "openai": "run.batch_openai:OpenAIBatches",
             "anthropic": "run.batch_anthropic:AnthropicBatches"}


METRIC: contextvars.ContextVar[str] = contextvars.ContextVar("metric", default="")  # which entry's metric asks


class BatchFailed(Exception):
    """A judge request whose batch, or whose own answer in it, failed."""


def request_key(model: str, prompt: str, schema, repeat: str = "") -> str:
    """A batch request's id: its content's hash, and the run number of an entry repeated on purpose
    (recording.requests.repeat_of), so a verdict judged again is never answered with its first request's."""
    shape = schema.model_json_schema() if schema is not None else None
    content = [model, prompt, shape, *([repeat] if repeat else [])]
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:20]


def transient(error: BaseException) -> bool:
    """live_calls' transient failures, and a connection lost under aiohttp (google-genai's async transport)."""
    aiohttp = sys.modules.get("aiohttp")  # not imported: none of its errors can be here
    return live_calls.is_transient(error) or (aiohttp is not None and any(
        isinstance(cause, aiohttp.ClientConnectionError) for cause in live_calls.causes(error)))


class Journal:
    """What was submitted and what came back, one JSON line each, appended as it happens."""

    def __init__(self, path: Path):
        self.path, self.lock = Path(path), threading.Lock()
        self.jobs: dict[str, list[str]] = {}  # job name -> request keys
        self.done: set[str] = set()
        self.answers: dict[str, dict] = {}  # request key -> {"text", "tokens_in", "tokens_out"} or {"error"}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                except ValueError:
                    continue  # a torn last line: that answer is polled again
                if "job" in item and "keys" in item:
                    self.jobs[item["job"]] = item["keys"]
                elif "done" in item:
                    self.done.add(item["done"])
                elif "key" in item and "error" not in item:  # a failed request is asked again, not kept
                    self.answers[item["key"]] = item

    def write(self, item: dict) -> None:
        with self.lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(item) + "\n")

    def finish(self, job: str) -> None:
        """The job needs no more polling: all its answers are journaled, or the server forgot it."""
        self.done.add(job)
        self.write({"done": job})

    def pending(self) -> list[str]:
        return [job for job in self.jobs if job not in self.done]


class Rounds:
    """The round keeper: requests queue until every running metric waits, then go out as one batch."""

    def __init__(self, provider, journal: Journal, log: Callable[[str], None],
                 poll_s: Optional[float] = None, wait_s: Optional[float] = None):
        self.provider, self.model, self.journal, self.log = provider, provider.model, journal, log
        self.poll_s = poll_s if poll_s is not None else env_seconds(POLL_VARIABLE, POLL_S)
        self.wait_s = wait_s if wait_s is not None else env_seconds(WAIT_VARIABLE, WAIT_S)
        self.active = 0
        self.waiting: dict[str, tuple[Any, list[asyncio.Future]]] = {}  # request key -> (inline request, [futures])
        self.asking: dict[str, int] = {}  # metric -> its requests not answered yet
        self.rounds = 0
        self.flushing: Optional[asyncio.Task] = None

    async def ask(self, prompt: str, schema) -> dict:
        """The judge's answer to one request: from the journal, or from the next round's batch."""
        key = request_key(self.model, prompt, schema, repeat_of(METRIC.get()))
        if key in self.journal.answers:
            return self.answered(key)
        future = asyncio.get_running_loop().create_future()
        if key in self.waiting:
            self.waiting[key][1].append(future)
        else:
            self.waiting[key] = (self.provider.request(prompt, schema), [future])
        metric = METRIC.get()
        self.asking[metric] = self.asking.get(metric, 0) + 1
        self.check()
        try:
            await future
        finally:
            self.asking[metric] -= 1
            if not self.asking[metric]:
                del self.asking[metric]
        return self.answered(key)

    def answered(self, key: str) -> dict:
        answer = self.journal.answers[key]
        if "error" in answer:
            raise BatchFailed(answer["error"])
        return answer

    def started(self) -> None:
        self.active += 1

    def finished(self) -> None:
        self.active -= 1
        self.check()

    def check(self) -> None:
        """Send the round once every running metric waits on a request (see settle)."""
        if self.waiting and self.flushing is None:
            self.flushing = asyncio.get_running_loop().create_task(self.settle())
            # A stop (KeyboardInterrupt) that lands while this task runs ends the run from the loop; the task
            # keeps it too, and is marked retrieved here, so the exit prints no "Task exception was never
            # retrieved".
            self.flushing.add_done_callback(lambda task: task.cancelled() or task.exception())

    async def settle(self) -> None:
        """Let the other metrics run up to their next request first (a metric may ask two things at once),
        then send the round if every running metric is waiting."""
        seen = -1
        while seen != len(self.waiting):
            seen = len(self.waiting)
            for _ in range(3):
                await asyncio.sleep(0)
        if self.waiting and len(self.asking) >= self.active:
            await self.flush()
        self.flushing = None
        if self.waiting and len(self.asking) >= self.active:
            self.check()  # requests that came in while the round was out

    async def flush(self) -> None:
        """Send the waiting requests as one job and wake their metrics once each has its answer or error."""
        waiting, self.waiting = self.waiting, {}
        keys = list(waiting)
        self.rounds += 1
        try:
            why = await self.collect(await self.submit(keys, [waiting[k][0] for k in keys]))
        except CallFailed as e:
            why = str(e)
        except Exception as e:  # noqa: BLE001 - never a dead round: its metrics would wait forever
            why = f"batch round {self.rounds}: {one_line(e)}"
        self.unanswered(keys, why or "no answer")
        for key in keys:
            for future in waiting[key][1]:
                if not future.done():
                    future.set_result(None)

    async def submit(self, keys: list[str], requests: list[dict]) -> str:
        """Create the round's job and journal its name and request keys."""
        name = await self.retried(f"batch round {self.rounds}", lambda: self.provider.create(
            requests, f"judge round {self.rounds}"))
        self.journal.jobs[name] = keys
        self.journal.write({"job": name, "keys": keys})
        self.log(f"batch {outside_text(name)}: {len(keys)} judge requests (round {self.rounds})")
        return name

    async def retried(self, name: str, call: Callable[[], Awaitable]) -> Any:
        """call(), its transient failures retried as live_calls.with_retries retries a call (MAX_ATTEMPTS,
        MAX_TOTAL_WAIT, Retry-After), waiting on the event loop; CallFailed, one line, when it gives up."""
        waited = 0.0
        for attempt in range(1, live_calls.MAX_ATTEMPTS + 1):
            try:
                return await call()
            except Exception as error:  # noqa: BLE001 - classified, then retried or reported
                if not transient(error):
                    raise CallFailed(f"{name}: {one_line(error)}") from error
                asked = live_calls.retry_after(error)
                delay = asked if asked is not None else \
                    live_calls.FIRST_DELAY * 2 ** (attempt - 1) * random.uniform(1, 1.5)
                if attempt == live_calls.MAX_ATTEMPTS or waited + delay > live_calls.MAX_TOTAL_WAIT:
                    raise CallFailed(f"{name}: {one_line(error)} (gave up after {attempt} attempt"
                                     f"{'s' if attempt > 1 else ''})") from error
                why = " (Retry-After)" if asked is not None else ""
                self.log(f"retry {attempt}/{live_calls.MAX_ATTEMPTS - 1} for {name} in {delay:.1f}s{why}: "
                         f"{one_line(error)}")
                await asyncio.sleep(delay)
                waited += delay

    async def polled(self, name: str):
        """The job once done, or None when it is still running after `wait_s` of polling."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while True:
            job = await self.retried(f"batch {outside_text(name)}", lambda: self.provider.get(name))
            if self.provider.state(job) is not None:
                return job
            if loop.time() + self.poll_s > deadline:
                return None
            await asyncio.sleep(self.poll_s)

    async def collect(self, name: str) -> Optional[str]:
        """Poll a submitted job until it is done and journal each answer (or each request's error); None then,
        else why its requests have no answer in this run."""
        keys, shown = self.journal.jobs[name], outside_text(name)
        try:
            job = await self.polled(name)
        except CallFailed as e:
            if e.__cause__ is not None and status_of(e.__cause__) == 404:
                self.journal.finish(name)
                why = f"batch {shown}: the server no longer knows this job (HTTP 404): its {len(keys)} requests " \
                      "are asked again"
                self.log(why)
                return why
            return self.unanswered(keys, f"{e}; the job is polled again by the next run")
        if job is None:
            return self.unanswered(keys, f"batch {shown}: still running after {self.wait_s:g}s of polling "
                                         f"({WAIT_VARIABLE}); the next run polls it again")
        state = self.provider.state(job)
        answers = [] if state != "succeeded" else await self.retried(
            f"batch {shown}", lambda: self.provider.results(job, len(keys), shown))
        for i, key in enumerate(keys):
            if key not in self.journal.answers:
                found = answers[i] if i < len(answers) else None
                item = {"key": key, **(found or {"error": f"batch {shown} ended {state}"})}
                self.journal.answers[key] = item
                self.journal.write(item)
        self.journal.finish(name)
        return None

    def unanswered(self, keys: list[str], why: str) -> str:
        """Each of `keys` without an answer gets `why` as its error, for this run only (not journaled)."""
        for key in keys:
            self.journal.answers.setdefault(key, {"key": key, "error": why})
        return why

    async def resume(self) -> None:
        """Poll every job a killed run submitted, before any new request goes out."""
        pending = self.journal.pending()
        for name in pending:
            self.log(f"batch {outside_text(name)}: polling the job an earlier run submitted")
        await asyncio.gather(*(self.collect(name) for name in pending))


def batch_judge(name: str, rounds: Rounds):
    """The provider's DeepEval model class whose a_generate asks through the rounds, costed at the batch price
    from DeepEval's table of the judge's provider (plan.price), its answer parsed as the OpenAI and Anthropic
    judges parse theirs, and never asks for log probabilities (GEval would ask them outside the rounds)."""
    import dataclasses

    from deepeval.models.utils import EvaluationCost

    from whichstage.run import plan
    from whichstage.providers.answers import judged

    rates = plan.price(name)
    base: type  # the provider's DeepEval model class
    base, settings = rounds.provider.judge_class()

    class BatchJudge(base):
        def generate(self, prompt, schema=None, audio=None):
            raise RuntimeError("the batch judge answers on DeepEval's async path only")

        async def a_generate(self, prompt, schema=None, audio=None):
            answer = await rounds.ask(prompt, schema)
            cost = None if rates is None else BATCH_DISCOUNT * (answer["tokens_in"] * rates[0]
                                                                + answer["tokens_out"] * rates[1])
            spent = EvaluationCost(cost, answer["tokens_in"], answer["tokens_out"])
            return judged(answer["text"], schema), spent

        def load_model(self, *args, **kwargs):
            return None

    judge = BatchJudge(**settings)
    if getattr(judge, "model_data", None) is not None:
        judge.model_data = dataclasses.replace(judge.model_data, supports_log_probs=False)
    return judge


async def measure_all(jobs: list[tuple[str, Callable]], rounds: Rounds) -> dict[str, Any]:
    """Run every metric at once in rounds: job name -> its result, or the exception that stopped it (one line,
    scrubbed)."""
    results: dict[str, Any] = {}

    async def one(name: str, run: Callable):
        METRIC.set(name)
        rounds.started()
        try:
            results[name] = await run()
        except Exception as e:  # noqa: BLE001 - the metric's entry becomes an error, named
            results[name] = e if isinstance(e, BatchFailed) else BatchFailed(one_line(e))
        finally:
            rounds.finished()

    try:
        await rounds.resume()
        await asyncio.gather(*(one(name, run) for name, run in jobs))
    finally:
        await rounds.provider.close()  # this loop's connections: a later phase runs on another loop
    return results


def has_batches(judge: str) -> bool:
    """The judge's provider has a batch API here (PROVIDERS)."""
    return provider_of(judge) in PROVIDERS


def provider(judge: str):
    """The batch provider of a judge, for the name its provider knows it by."""
    module, name = PROVIDERS[provider_of(judge)].split(":")
    return getattr(importlib.import_module(f"whichstage.{module}"), name)(model_of(judge))


class Measurer:
    """A --batch run's measurer, called with [(entry, judging.Measure)]: entry -> its value or the exception
    that stopped it, in its rounds, journaled in `journal`."""

    def __init__(self, rounds: Rounds, judge_model: Any):
        self.rounds, self.judge_model, self.journal = rounds, judge_model, rounds.journal

    def __call__(self, jobs: list) -> dict:
        judge_model = self.judge_model
        return asyncio.run(measure_all([(name, lambda m=m: m.a_measure(judge_model)) for name, m in jobs],
                                       self.rounds))


def measurer(judge: str, recording: Path, log: Callable[[str], None]) -> Measurer:
    """The measurer of a --batch run, its rounds journaled beside the recording (`.NAME.batch.jsonl`, the
    measurer's `journal`)."""
    journal = Journal(recording.with_name(f".{recording.stem}.batch.jsonl"))
    rounds = Rounds(provider(judge), journal, log)
    return Measurer(rounds, batch_judge(judge, rounds))

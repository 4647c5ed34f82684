"""`--live --batch`: the judge's calls through the Gemini Batch API, in rounds, at the batch price.

DeepEval's metrics ask the judge several times in sequence (truths and claims, then verdicts, then a reason),
so every pending metric runs at once on DeepEval's async path, and the judge's `a_generate` only queues its
request: once every running metric waits on one, the round's requests go out as one batch
(`client.batches.create` with inline requests), `batches.get` polls it until done, and each answer goes back to
the metric that asked. Rounds follow until every metric has its score. Agent runs stay interactive: each
step of an agent depends on the last.

Nothing paid is sent twice: the journal beside the recording (`.NAME.batch.jsonl`) gets each job's name and
request keys when it is submitted and each answer as it arrives, so a killed run polls the jobs it already
submitted, and a request whose answer is journaled is answered from it. A request is keyed by the model, the
prompt and the schema's JSON schema. A failed, expired or partly failed batch makes only the metrics that
asked in it errors, each naming the job and what failed; the next run asks those requests again (a failed
request is not billed), and the journal is removed once the recording holds every answer.
"""
import asyncio
import contextvars
import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Callable, Optional

POLL_S = 10.0  # between batches.get calls: a batch takes minutes to hours (DOCS_BATCH_POLL_S sets another)
DONE = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_EXPIRED", "JOB_STATE_CANCELLED"}
BATCH_DISCOUNT = 0.5  # Gemini's published Batch API price: half the interactive one


METRIC: contextvars.ContextVar[str] = contextvars.ContextVar("metric", default="")  # which metric asks


class BatchFailed(Exception):
    """A judge request whose batch, or whose own answer in it, failed."""


def request_key(model: str, prompt: str, schema) -> str:
    shape = schema.model_json_schema() if schema is not None else None
    return hashlib.sha256(json.dumps([model, prompt, shape], sort_keys=True).encode()).hexdigest()[:20]


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

    def pending(self) -> list[str]:
        return [job for job in self.jobs if job not in self.done]


class Rounds:
    """The round keeper: requests queue until every running metric waits, then go out as one batch."""

    def __init__(self, client, model: str, journal: Journal, log: Callable[[str], None],
                 poll_s: Optional[float] = None):
        import os

        self.client, self.model, self.journal, self.log = client, model, journal, log
        self.poll_s = poll_s if poll_s is not None else float(os.environ.get("DOCS_BATCH_POLL_S") or POLL_S)
        self.active, self.waiting = 0, {}  # request key -> (inline request, [futures])
        self.asking: dict[str, int] = {}  # metric -> its requests not answered yet
        self.rounds = 0
        self.flushing: Optional[asyncio.Task] = None

    async def ask(self, prompt: str, schema) -> dict:
        """The judge's answer to one request: from the journal, or from the next round's batch."""
        key = request_key(self.model, prompt, schema)
        if key in self.journal.answers:
            return self.answered(key)
        future = asyncio.get_running_loop().create_future()
        if key in self.waiting:
            self.waiting[key][1].append(future)
        else:
            config = {"temperature": 0, **({"response_mime_type": "application/json", "response_schema": schema}
                                          if schema is not None else {})}
            self.waiting[key] = ({"contents": [{"role": "user", "parts": [{"text": prompt}]}], "config": config},
                                 [future])
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
        waiting, self.waiting = self.waiting, {}
        keys = list(waiting)
        self.rounds += 1
        job = await asyncio.to_thread(self.client.batches.create, model=self.model,
                                      src=[waiting[k][0] for k in keys],
                                      config={"display_name": f"judge round {self.rounds}"})
        self.journal.jobs[job.name] = keys
        self.journal.write({"job": job.name, "keys": keys})
        self.log(f"batch {job.name}: {len(keys)} judge requests (round {self.rounds})")
        await self.collect(job.name)
        for key in keys:
            for future in waiting[key][1]:
                if not future.done():
                    future.set_result(None)

    async def collect(self, name: str) -> None:
        """Poll a submitted job until it is done and journal each answer (or each request's error)."""
        keys = self.journal.jobs[name]
        while True:
            job = await asyncio.to_thread(self.client.batches.get, name=name)
            state = getattr(job.state, "name", str(job.state))
            if state in DONE:
                break
            await asyncio.sleep(self.poll_s)
        answers = list(getattr(getattr(job, "dest", None), "inlined_responses", None) or [])
        for i, key in enumerate(keys):
            if key in self.journal.answers:
                continue
            if state != "JOB_STATE_SUCCEEDED" or i >= len(answers):
                item = {"key": key, "error": f"batch {name} ended {state.removeprefix('JOB_STATE_').lower()}"}
            elif answers[i].error is not None:
                error = answers[i].error
                item = {"key": key, "error": f"batch {name}: request {i + 1} failed: {error.code} "
                                             f"{' '.join(str(error.message or '').split())[:200]}"}
            else:
                response = answers[i].response
                from harness.providers import response_problem

                problem = response_problem(response)
                if problem:
                    item = {"key": key, "error": f"batch {name}: request {i + 1}: {problem}"}
                else:
                    usage = response.usage_metadata
                    item = {"key": key, "text": response.text or "",
                            "tokens_in": getattr(usage, "prompt_token_count", None) or 0,
                            "tokens_out": getattr(usage, "candidates_token_count", None) or 0}
            self.journal.answers[key] = item
            self.journal.write(item)
        self.journal.done.add(name)
        self.journal.write({"done": name})

    async def resume(self) -> None:
        """Poll every job a killed run submitted, before any new request goes out."""
        for name in self.journal.pending():
            self.log(f"batch {name}: polling the job an interrupted run submitted")
            await self.collect(name)


def batch_judge(name: str, rounds: Rounds):
    """DeepEval's GeminiModel whose a_generate asks through the rounds, costed at the batch price."""
    from deepeval.models import GeminiModel
    from deepeval.models.utils import EvaluationCost

    from harness import plan, providers

    rates = plan.price(name)

    class BatchJudge(GeminiModel):
        def generate(self, prompt, schema=None, audio=None):
            raise RuntimeError("the batch judge answers on DeepEval's async path only")

        async def a_generate(self, prompt, schema=None, audio=None):
            answer = await rounds.ask(prompt, schema)
            cost = None if rates is None else BATCH_DISCOUNT * (answer["tokens_in"] * rates[0]
                                                                + answer["tokens_out"] * rates[1])
            spent = EvaluationCost(cost, answer["tokens_in"], answer["tokens_out"])
            return (providers.parsed_answer(schema, answer["text"]) if schema is not None else answer["text"]), spent

        def load_model(self):
            return None

    return BatchJudge(model=name, api_key=providers.google_api_key(), temperature=0)


async def measure_all(jobs: list[tuple[str, Callable]], rounds: Rounds) -> dict[str, Any]:
    """Run every metric at once in rounds: job name -> its result, or the exception that stopped it."""
    results: dict[str, Any] = {}
    await rounds.resume()

    async def one(name: str, run: Callable):
        METRIC.set(name)
        rounds.started()
        try:
            results[name] = await run()
        except Exception as e:  # noqa: BLE001 - the metric's entry becomes an error, named
            results[name] = e
        finally:
            rounds.finished()

    await asyncio.gather(*(one(name, run) for name, run in jobs))
    return results


def client():
    """A google-genai client for batches, one attempt per call, as every Gemini client here."""
    from google import genai

    from harness import providers

    return genai.Client(api_key=providers.google_api_key(), http_options=providers.gemini_http_options())


def measurer(judge: str, recording: Path, log: Callable[[str], None]) -> Callable[[list], dict]:
    """The measurer of a --batch run: [(entry, judging.Measure)] -> entry -> its value or the exception that
    stopped it, in rounds journaled beside the recording (`.NAME.batch.jsonl`, the measurer's `journal`)."""
    journal = Journal(recording.with_name(f".{recording.stem}.batch.jsonl"))
    rounds = Rounds(client(), judge, journal, log)
    judge_model = batch_judge(judge, rounds)

    def measure(jobs: list) -> dict:
        return asyncio.run(measure_all([(name, lambda m=m: m.a_measure(judge_model)) for name, m in jobs], rounds))
    measure.journal = journal
    return measure

"""The Gemini Batch API of the stand-in (whichstage/standins/gemini.py), driven by the real google-genai client:
`batches.create(model=..., src=[inline requests])` and `batches.get(name=...)` until the job is done, as the
harness will send judge requests in batches. No network beyond 127.0.0.1.

Each inline request is answered as generateContent answers it (the tests compare with a direct call); a job
stays PENDING / RUNNING for `batch_polls` gets or `batch_seconds`; faults end a whole job FAILED / EXPIRED or
fail one request in it; the jobs live in the stand-in, so a fresh client or another process gets one by name.
"""
import json
import time

import httpx
import pytest
from google import genai
from google.genai import errors, types

from conftest import in_child, serial_judge
from whichstage.providers.gemini import gemini_http_options
from whichstage.providers.settings import GEMINI_URL_VARIABLE
from whichstage.standins import gemini as gemini_standin
from whichstage.standins.gemini_faults import Fault

CHAT, EMBED, JUDGE = "gemini-standin-chat", "gemini-standin-embed", "gemini-standin-judge"
REJECTED_KEY = "rejected-key"
FAULTS = {JUDGE: {"job-fails": Fault("batch-failed"), "job-expires": Fault("batch-expired"),
                  "fails-once": Fault("batch-failed", times=1), "request-500": Fault("500"),
                  "request-429": Fault("429"), "request-safety": Fault("safety"),
                  "create-refused": Fault("create-429", times=1, retry_after=7), "poll-fails": Fault("poll-500", times=1),
                  "poll-resets": Fault("poll-reset", times=1), "never-ends": Fault("never-ends", times=1),
                  "key-echo": Fault("key-echo")}}


def judge_requests(truths_text: str = "The backup runs nightly at 2am. It keeps seven copies.") -> list[dict]:
    """Three of DeepEval's faithfulness requests, as its GeminiModel configures them (JSON with a schema)."""
    from deepeval.metrics.faithfulness.schema import Claims, Truths, Verdicts

    def config(schema):
        return {"response_mime_type": "application/json", "response_schema": schema, "temperature": 0,
                "safety_settings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_NONE"}]}

    prompts = [(f"Extract the truths.\n\nText:\n{truths_text}\n\nJSON:\n", Truths),
               ("Extract the claims.\n\nAI Output:\nThe backup runs nightly. It keeps ten copies.\n\nJSON:\n", Claims),
               ("Judge each claim.\n\nRetrieval Contexts:\n" + json.dumps([truths_text]) + "\n\nClaims:\n"
                + json.dumps(["The backup runs nightly.", "It keeps ten copies."]) + "\n\nJSON:\n", Verdicts)]
    return [{"contents": prompt, "config": config(schema), "metadata": {"key": schema.__name__}}
            for prompt, schema in prompts]


@pytest.fixture
def start(shared_ssl_contexts, monkeypatch):
    """Start a stand-in with the given batch knobs; google-genai reaches it through GOOGLE_GEMINI_BASE_URL."""
    serial_judge(monkeypatch, gemini_standin)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    running = []

    def started(**knobs):
        context = gemini_standin.serve(faults=FAULTS, reject_keys=[REJECTED_KEY], **knobs)
        standin = context.__enter__()
        running.append(context)
        monkeypatch.setenv(GEMINI_URL_VARIABLE, standin.url)
        return standin

    yield started
    for context in running:
        context.__exit__(None, None, None)


def client(key: str = "test-key") -> genai.Client:
    return genai.Client(api_key=key, http_options=gemini_http_options())


def poll(gemini: genai.Client, name: str, limit: int = 20) -> tuple[types.BatchJob, list[str]]:
    """Get the job until it is done: the job, and the state each get answered."""
    states = []
    for _ in range(limit):
        job = gemini.batches.get(name=name)
        states.append(job.state.name)
        if job.done:
            return job, states
    raise AssertionError(f"{name} not done after {limit} gets: {states}")


def test_judge_requests_in_a_batch_are_answered_as_generate_content_answers_them(start):
    from deepeval.metrics.faithfulness.schema import Claims, Truths, Verdicts

    standin = start(batch_polls=2)
    gemini, requests = client(), judge_requests()
    job = gemini.batches.create(model=JUDGE, src=requests, config={"display_name": "faithfulness"})
    assert job.name.startswith("batches/") and job.state == types.JobState.JOB_STATE_PENDING and not job.done
    assert job.display_name == "faithfulness" and job.model == f"models/{JUDGE}" and job.dest is None
    assert standin.count(kind="batch-create", batch=job.name, requests=3, model=JUDGE) == 1
    assert standin.count(batch=job.name, kind="judge") == 0  # nothing is answered while the job waits

    done, states = poll(gemini, job.name)
    assert states == ["JOB_STATE_RUNNING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]
    assert standin.count(kind="batch-get", batch=job.name) == 3
    assert done.name == job.name and done.end_time is not None
    inlined = done.dest.inlined_responses
    assert [r.metadata for r in inlined] == [r["metadata"] for r in requests]  # in the order of the requests
    assert all(r.error is None for r in inlined)
    for schema, answer in zip((Truths, Claims, Verdicts), inlined):
        schema.model_validate_json(answer.response.text)
    assert Truths.model_validate_json(inlined[0].response.text).truths == [
        "The backup runs nightly at 2am.", "It keeps seven copies."]
    assert len(Verdicts.model_validate_json(inlined[2].response.text).verdicts) == 2  # one per claim

    # Each answer, usageMetadata and all, is what generateContent answers the same request.
    for request, answer in zip(requests, inlined):
        direct = gemini.models.generate_content(model=JUDGE, contents=request["contents"], config=request["config"])
        assert answer.response.text == direct.text
        assert answer.response.usage_metadata == direct.usage_metadata
        assert answer.response.candidates[0].finish_reason == types.FinishReason.STOP
    # The inline requests are logged as judge answers of the job, with their tokens, and only once.
    batched = [r for r in standin.requests if r["batch"] == job.name and r["kind"] == "judge"]
    assert [r["index"] for r in batched] == [0, 1, 2] and all(r["status"] == 200 for r in batched)
    assert [r["tokens"] for r in batched] == [(a.response.usage_metadata.prompt_token_count,
                                               a.response.usage_metadata.candidates_token_count) for a in inlined]
    again = gemini.batches.get(name=job.name)
    assert again.state == types.JobState.JOB_STATE_SUCCEEDED
    assert [a.response.text for a in again.dest.inlined_responses] == [a.response.text for a in inlined]
    assert standin.count(batch=job.name, kind="judge") == 3
    assert standin.count(kind="judge", batch="") == 3  # the direct calls above


def test_a_plain_text_request_is_answered_by_the_chat_model(start):
    standin = start()
    gemini = client()
    question = "How do I restore a backup?"
    job = gemini.batches.create(model=CHAT, src=[{"contents": [{"role": "user", "parts": [{"text": question}]}]}])
    done, states = poll(gemini, job.name)
    assert states == ["JOB_STATE_SUCCEEDED"]  # no delay: the first get finds it done
    (answer,) = done.dest.inlined_responses
    direct = gemini.models.generate_content(model=CHAT, contents=question)
    assert answer.response.text == direct.text and answer.response.text
    assert answer.response.usage_metadata == direct.usage_metadata
    assert answer.metadata is None
    assert standin.count(batch=job.name, kind="chat", status=200) == 1


def test_a_job_runs_once_its_seconds_have_passed(start):
    standin = start(batch_seconds=0.3)
    gemini = client()
    job = gemini.batches.create(model=JUDGE, src=judge_requests()[:1])
    assert gemini.batches.get(name=job.name).state == types.JobState.JOB_STATE_RUNNING
    assert gemini.batches.get(name=job.name).state == types.JobState.JOB_STATE_RUNNING
    time.sleep(0.35)
    done = gemini.batches.get(name=job.name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED and len(done.dest.inlined_responses) == 1
    assert [r["state"] for r in standin.requests if r["kind"] == "batch-get"] == [
        "BATCH_STATE_RUNNING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED"]


@pytest.mark.parametrize("marker, fault, state", [("job-fails", "batch-failed", "JOB_STATE_FAILED"),
                                                  ("job-expires", "batch-expired", "JOB_STATE_EXPIRED")])
def test_a_job_level_fault_ends_the_whole_job_with_no_responses(start, marker, fault, state):
    standin = start(batch_polls=1)
    gemini = client()
    job = gemini.batches.create(model=JUDGE, src=judge_requests(f"The backup runs nightly. {marker}."))
    done, states = poll(gemini, job.name)
    assert states == ["JOB_STATE_RUNNING", state] and done.done
    assert done.dest is None  # no inlined responses at all
    assert standin.count(batch=job.name, kind="judge") == 0  # no request was answered
    assert standin.count(kind="batch-get", batch=job.name, fault=fault, marker=marker) == 1
    # A job-level fault is a batch's: the same text sent to generateContent is answered.
    request = judge_requests(f"The backup runs nightly. {marker}.")[0]
    assert gemini.models.generate_content(model=JUDGE, contents=request["contents"], config=request["config"]).text


def test_a_job_level_fault_with_times_fails_only_the_first_job(start):
    start()
    gemini = client()
    first = gemini.batches.create(model=JUDGE, src=judge_requests("A fact. fails-once."))
    second = gemini.batches.create(model=JUDGE, src=judge_requests("A fact. fails-once."))
    assert poll(gemini, first.name)[0].state == types.JobState.JOB_STATE_FAILED
    assert poll(gemini, second.name)[0].state == types.JobState.JOB_STATE_SUCCEEDED


def test_one_failing_request_carries_an_error_and_the_others_their_answers(start):
    standin = start()
    gemini = client()
    requests = judge_requests()
    failing = judge_requests("The backup runs nightly. request-500.")[0]
    limited = judge_requests("The backup runs nightly. request-429.")[0]
    withheld = judge_requests("The backup runs nightly. request-safety.")[0]
    src = [requests[0], {**failing, "metadata": {"key": "failing"}}, requests[1], limited, withheld, requests[2]]
    done, _ = poll(gemini, gemini.batches.create(model=JUDGE, src=src).name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED  # one request failing does not fail the job
    inlined = done.dest.inlined_responses
    assert len(inlined) == len(src)
    assert inlined[1].response is None and inlined[1].metadata == {"key": "failing"}
    assert inlined[1].error.code == 500 and "internal error" in inlined[1].error.message
    assert inlined[3].response is None and inlined[3].error.code == 429
    # A response-shape fault is a response, as generateContent answers it: finishReason SAFETY, no text.
    assert inlined[4].error is None and inlined[4].response.candidates[0].finish_reason == types.FinishReason.SAFETY
    assert inlined[4].response.text is None
    for i in (0, 2, 5):
        assert inlined[i].error is None and inlined[i].response.text
    logged = [r for r in standin.requests if r["batch"] == done.name and r["kind"] == "judge"]
    assert [(r["status"], r["fault"], r["marker"]) for r in logged] == [
        (200, "", ""), (500, "500", "request-500"), (200, "", ""), (429, "429", "request-429"),
        (200, "safety", "request-safety"), (200, "", "")]


def restarted(name: str) -> list[str]:
    """What a new client, knowing only a job's name, reads of it: its state, then each answer's text."""
    gemini = genai.Client(api_key="other-key", http_options=gemini_http_options())
    job = gemini.batches.get(name=name)
    return [job.state.name, *(r.response.text for r in job.dest.inlined_responses)]


def test_a_fresh_client_gets_a_job_by_name(start):
    standin = start(batch_polls=2)
    creator, fresh = client(), client()  # (held: google-genai closes a client's connections when it is dropped)
    job = creator.batches.create(model=JUDGE, src=judge_requests())
    for _ in range(2):  # a new client polls it
        assert fresh.batches.get(name=job.name).state == types.JobState.JOB_STATE_RUNNING
    lines = in_child(restarted, job.name)  # another process, as a harness restarted mid-job
    assert lines[0] == "JOB_STATE_SUCCEEDED" and len(lines) == 4
    assert json.loads(lines[1])["truths"] == ["The backup runs nightly at 2am.", "It keeps seven copies."]
    again = fresh.batches.get(name=job.name)
    assert [a.response.text for a in again.dest.inlined_responses] == lines[1:]
    assert standin.count(kind="batch-get", batch=job.name) == 4


def test_a_job_is_cancelled_and_deleted(start):
    standin = start(batch_polls=5)
    gemini = client()
    job = gemini.batches.create(model=JUDGE, src=judge_requests())
    assert gemini.batches.get(name=job.name).state == types.JobState.JOB_STATE_RUNNING
    gemini.batches.cancel(name=job.name)
    cancelled = gemini.batches.get(name=job.name)
    assert cancelled.state == types.JobState.JOB_STATE_CANCELLED and cancelled.done and cancelled.dest is None
    gemini.batches.delete(name=job.name)
    with pytest.raises(errors.ClientError) as missing:
        gemini.batches.get(name=job.name)
    assert missing.value.code == 404
    assert [standin.count(kind=k, batch=job.name) for k in ("batch-cancel", "batch-delete", "batch-get")] == [1, 1, 3]
    assert standin.count(batch=job.name, kind="judge") == 0


def test_refusals_unknown_job_rejected_key_unknown_model_and_no_requests(start):
    standin = start()
    gemini, rejecting = client(), client(REJECTED_KEY)
    with pytest.raises(errors.ClientError) as unknown:
        gemini.batches.get(name="batches/no-such-job")
    assert unknown.value.code == 404
    with pytest.raises(errors.ClientError) as rejected:
        rejecting.batches.create(model=JUDGE, src=judge_requests())
    assert rejected.value.code == 400 and "API key not valid" in rejected.value.message
    with pytest.raises(errors.ClientError) as model:
        gemini.batches.create(model="gemini-nope", src=judge_requests())
    assert model.value.code == 404
    with pytest.raises(errors.ClientError) as empty:
        gemini.batches.create(model=JUDGE, src=[])
    assert empty.value.code == 400
    with pytest.raises(errors.ClientError) as embedder:
        gemini.batches.create(model=EMBED, src=judge_requests())
    assert embedder.value.code == 400
    assert standin.jobs == {}
    assert [r["kind"] for r in standin.requests] == [
        "batch-get", "rejected-key", "unknown-model", "batch-create", "batch-create"]


def test_batch_faults_refuse_a_create_fail_or_reset_a_poll_keep_a_job_running_and_quote_the_key(start):
    standin = start()
    gemini = client("quoted-key")
    with pytest.raises(errors.ClientError) as refused:
        gemini.batches.create(model=JUDGE, src=judge_requests("A fact. create-refused."))
    assert refused.value.code == 429 and refused.value.response.headers["retry-after"] == "7"
    assert standin.jobs == {}  # a refused create queues nothing

    job = gemini.batches.create(model=JUDGE, src=judge_requests("A fact. poll-fails."))
    with pytest.raises(errors.ServerError) as failed:
        gemini.batches.get(name=job.name)
    assert failed.value.code == 500
    assert poll(gemini, job.name)[0].state == types.JobState.JOB_STATE_SUCCEEDED  # times=1: then it answers

    job = gemini.batches.create(model=JUDGE, src=judge_requests("A fact. poll-resets."))
    with httpx.Client() as raw:  # the raw transport, which retries nothing: the connection is reset
        with pytest.raises(httpx.TransportError):
            raw.get(f"{standin.url}/v1beta/{job.name}", headers={"x-goog-api-key": "k"})
    assert standin.count(kind="batch-get", batch=job.name, status=0, fault="poll-reset") == 1

    stuck = gemini.batches.create(model=JUDGE, src=judge_requests("A fact. never-ends."))
    states = [gemini.batches.get(name=stuck.name).state.name for _ in range(5)]
    assert states == ["JOB_STATE_RUNNING"] * 5
    standin.jobs[stuck.name].stuck = False  # the test lets it run: `times` spent, it ends
    assert gemini.batches.get(name=stuck.name).state == types.JobState.JOB_STATE_SUCCEEDED

    echoed = gemini.batches.create(model=JUDGE, src=judge_requests("A fact. key-echo.")[:1])
    (answer,) = poll(gemini, echoed.name)[0].dest.inlined_responses
    assert answer.error.code == 400 and "quoted-key" in answer.error.message

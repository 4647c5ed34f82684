"""Anthropic's Message Batches at the protocol level: the real anthropic SDK (whichstage/run/batch_anthropic.py, batch.py's
provider) creates a batch of DeepEval's judge requests at the stand-in (whichstage/standins/anthropic_batch.py),
polls it until it has ended, and reads each request's result back, matched by custom_id. The run through
`--live --batch` is tests/run/test_anthropic_batch.py's. No network beyond 127.0.0.1."""
import asyncio
import json

import pytest

from conftest import serial_judge
from whichstage.providers import build as providers
from whichstage.run.batch_anthropic import AnthropicBatches
from whichstage.providers.settings import HOSTED

KEY_VARIABLE, URL_VARIABLE = HOSTED["anthropic"][:2]
from whichstage.standins import anthropic as anthropic_standin
from whichstage.standins.anthropic import Fault, serve

MODEL = "claude-haiku-4-5"
NAME = f"anthropic:{MODEL}"
FAULTS = {MODEL: {"request-500": Fault("500"), "batch-expires": Fault("batch-expired")}}
POLLS = 2  # gets a batch stays in progress


def prompts(text: str = "The backup runs nightly at 2am. It keeps seven copies."):
    """Three of DeepEval's faithfulness requests: (prompt, schema)."""
    from deepeval.metrics.faithfulness.schema import Claims, Truths, Verdicts

    return [(f"Extract the truths.\n\nText:\n{text}\n\nJSON:\n", Truths),
            ("Extract the claims.\n\nAI Output:\nThe backup runs nightly. It keeps ten copies.\n\nJSON:\n", Claims),
            ("Judge each claim.\n\nRetrieval Contexts:\n" + json.dumps([text]) + "\n\nClaims:\n"
             + json.dumps(["The backup runs nightly.", "It keeps ten copies."]) + "\n\nJSON:\n", Verdicts)]


@pytest.fixture(scope="module")
def standin(shared_ssl_contexts):
    with pytest.MonkeyPatch.context() as mp:
        serial_judge(mp, anthropic_standin)
        with serve(models=[MODEL], faults=FAULTS, batch_polls=POLLS) as server:
            mp.setenv(KEY_VARIABLE, "test")
            mp.setenv(URL_VARIABLE, server.url)
            yield server


def batched(asked: list[tuple]) -> tuple[list[bool], list[dict]]:
    """Create a batch of `asked`, poll it until it has ended: whether each poll found it ended, and the outcomes."""
    async def go():
        batches = AnthropicBatches(MODEL)
        try:
            batch_id = await batches.create([batches.request(prompt, schema) for prompt, schema in asked], "test")
            polls = [await batches.get(batch_id)]
            while batches.state(polls[-1]) is None:
                polls.append(await batches.get(batch_id))
            ended = [batches.state(job) == "succeeded" for job in polls]
            return ended, await batches.results(polls[-1], len(asked), batch_id)
        finally:
            await batches.close()
    return asyncio.run(go())


def test_a_batch_answers_each_request_as_the_interactive_judge_does_in_order(standin):
    polls, outcomes = batched(prompts())
    assert polls == [False] * POLLS + [True]
    judge = providers.judge_model(NAME)
    for (prompt, schema), got in zip(prompts(), outcomes):
        verdict, cost = judge.generate(prompt, schema=schema)
        assert schema.model_validate_json(got["text"]) == verdict  # the results file came reversed
        assert (got["tokens_in"], got["tokens_out"]) == (cost.input_tokens, cost.output_tokens)


def test_a_failed_request_is_its_own_error_and_the_others_are_answered(standin):
    asked = prompts()
    asked[1] = (asked[1][0].replace("AI Output:\n", "AI Output:\nrequest-500 "), asked[1][1])
    _, outcomes = batched(asked)
    assert [("error" in o) for o in outcomes] == [False, True, False]
    assert outcomes[1]["error"].startswith("batch msgbatch_standin_") and \
        outcomes[1]["error"].endswith(": request 2 failed: api_error: Internal server error")


def test_an_expired_batch_makes_every_request_an_error(standin):
    _, outcomes = batched(prompts("batch-expires"))
    assert [o["error"].split(": ", 1)[1] for o in outcomes] == [f"request {i} expired" for i in (1, 2, 3)]

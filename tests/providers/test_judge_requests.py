"""Every stand-in answers every request the harness sends its judge, on each path: the Gemini, OpenAI,
Anthropic and Ollama stand-ins through the harness's own judge clients (providers.judge_model), and the Gemini,
OpenAI and Anthropic Batch APIs through the harness's batch providers (batch.PROVIDERS).

The requests are not listed here: they are what the harness's own metrics send. Every entry the harness computes
for the bundled example's recorded traces (entries.case_entries: the built-in stages, expected facts, the
behaviour judgements and the project's criteria, for a copy of the example given two `[criteria.NAME]`), and
every labelled calibration row (calibrate.measurer), is measured with the offline judge under fakes.py, which
keeps each request's prompt and schema class; one request of each metric and schema is then sent down each path,
and its answer must be the offline judge's own. A metric added to the harness is covered here as it is built.
"""
import asyncio
import contextlib
import importlib
import json
from pathlib import Path
from typing import Callable

import pytest

from conftest import copy_project, load_project, recorded_calls
from whichstage.run import batch
from whichstage.analysis import calibration as calibrate
from whichstage.judging import metrics as judging
from whichstage.providers import build as providers
from whichstage.project.validate import load_calibration
from whichstage.run.entries import Inputs, answer_check_entries, case_entries
from whichstage.providers.names import model_of, provider_of
from whichstage.offline.deepeval_prompts import UnknownRequest
from whichstage.offline.lexical_judge import LexicalJudge, request_kind
from whichstage._util.redact import HOSTED_KEY_VARIABLES, URL_VARIABLES
from whichstage.standins import judge_requests, launch
from whichstage.testing.fakes import Call, installed

CRITERIA = {  # one reading the default fields, one reading every field a criterion may
    "names_the_ticket": 'rubric = "The answer names the ticket it read and its status."',
    "grounded_and_complete": 'rubric = "The answer covers the \'Expected Output\' from the context alone."\n'
                             'reads = ["question", "answer", "context", "reference"]'}
OFFLINE_JUDGE = "lexical"


def with_criteria(project: Path) -> Path:
    """The project with CRITERIA in evals.toml and a labelled calibration row of each."""
    with open(project / "evals.toml", "a", encoding="utf-8") as toml:
        toml.writelines(f"\n[criteria.{name}]\n{table}\n" for name, table in CRITERIA.items())
    path = project / load_project(project).project.calibration
    labelled = json.loads(path.read_text())
    row = next(r for r in labelled["cases"] if r["metric"] == "answer_relevancy" and r["context"])
    labelled["cases"] += [{**row, "id": f"{name}-row", "metric": name} for name in CRITERIA]
    path.write_text(json.dumps(labelled))
    return project


def measured(compute, judge, fake) -> list[Call]:
    """The judge requests one entry's computation sends (fakes.Call, with its schema class)."""
    fake.reset()
    compute(judge)
    return [c for c in fake.reset() if c.kind == "judge"]


def run_entries(loaded) -> list[tuple[str, Callable]]:
    """Every entry a run computes for the bundled recording's traces (entries.case_entries, and the answer check
    of a failing one, entries.answer_check_entries), named `run <stage>` (or `run tools`, whose scores ask the
    judge nothing; `run lacks-in-context`), with how it is computed."""
    inputs = Inputs(loaded, "rules", "hash", OFFLINE_JUDGE)
    cases = {c["id"]: c for c in loaded.cases["cases"]}
    found = []
    for trace in recorded_calls()[0]:
        cid, at, variant = trace["name"].removeprefix("agent/").partition("@")
        case = cases[cid]
        checks = answer_check_entries(inputs, case, [case["reference"]], inputs.view(trace)["context"], at + variant)
        for name, (_, compute) in {**case_entries(inputs, case, trace, at + variant), **checks}.items():
            kind, *_, stage = name.split("/")
            found.append((f"run {stage if kind == 'judge' else kind}", compute))
    return found


def calibration_rows(loaded) -> list[tuple[str, Callable]]:
    """Every labelled calibration row, named `calibration <metric>`, with how calibrate.py judges it."""
    own = {c.name: c for c in loaded.project.criteria}
    return [(f"calibration {row['metric']}", calibrate.measurer(row, own))
            for row in load_calibration(loaded.project)["cases"]]


@pytest.fixture(scope="module")
def sent(tmp_path_factory) -> dict[str, Call]:
    """One request of each metric and schema the harness sends its judge, by `<where> <metric>: <request>`."""
    loaded = load_project(with_criteria(copy_project(tmp_path_factory.mktemp("criteria"))))
    found: dict[str, Call] = {}
    with installed() as fake:
        judge = providers.judge_model(OFFLINE_JUDGE)
        for where, compute in run_entries(loaded) + calibration_rows(loaded):
            for call in measured(compute, judge, fake):
                found.setdefault(f"{where}: {call.label}", call)
    return found


def test_the_requests_are_those_of_every_metric_a_run_gates_on(sent):
    asked = {key.split(":")[0] for key in sent}
    assert {f"run {judging.stage_of(m)}" for m in judging.gating_metrics(CRITERIA)} <= asked


def test_the_requests_are_those_of_every_metric_calibration_judges(sent):
    asked = {key.split(":")[0] for key in sent}
    assert {f"calibration {m}" for m in judging.calibrated_metrics(CRITERIA)} <= asked


def test_the_requests_are_those_of_the_answer_check_too(sent):
    assert {"run lacks-in-context", "run lacks-in-pages"} <= {key.split(":")[0] for key in sent}


def test_a_criterion_asks_for_its_evaluation_steps_then_its_score(sent):
    assert {key for key in sent if key.startswith("run names_the_ticket:")} == \
        {"run names_the_ticket: g_eval/Steps", "run names_the_ticket: g_eval/ReasonScore"}


def offline_answers(sent: dict[str, Call]) -> dict[str, dict]:
    judge = LexicalJudge()
    return {key: judge.generate(call.text, call.schema).model_dump() for key, call in sent.items()}


@pytest.fixture
def at(monkeypatch, shared_ssl_contexts):
    """start(provider): its stand-in runs (told no project's tools) until the test ends, with the variables
    `whichstage standin` prints set (every other provider's key and URL unset); the judge's name."""
    with contextlib.ExitStack() as running:
        def start(name: str) -> str:
            for variable in (*HOSTED_KEY_VARIABLES, *URL_VARIABLES, "OLLAMA_HOST"):
                monkeypatch.delenv(variable, raising=False)
            _, variables = running.enter_context(launch.started(name, roles={}))
            for variable, value in variables.items():
                monkeypatch.setenv(variable, value)
            return variables["DOCS_JUDGE"]
        yield start


def differences(answers: dict[str, object], sent: dict[str, Call]) -> dict[str, str]:
    """Each request whose answer is not the offline judge's: what came back instead."""
    expected = offline_answers(sent)
    return {key: str(answers[key])[:300] for key in sent if answers[key] != expected[key]}


def asked_directly(judge_name: str, sent: dict[str, Call]) -> dict[str, object]:
    """Each request through the harness's own judge client, as a live run asks it: the parsed answer, or the
    error."""
    judge, answers = providers.judge_model(judge_name), {}
    for key, call in sent.items():
        try:
            answer = judge.generate(call.text, call.schema)
            answers[key] = (answer[0] if isinstance(answer, tuple) else answer).model_dump()
        except Exception as e:  # noqa: BLE001 - the failure is what the test reports
            answers[key] = f"{type(e).__name__}: {e}"
    return answers


@pytest.mark.parametrize("provider", list(launch.PROVIDERS))
def test_each_standin_answers_every_request_as_the_offline_judge_does(provider, at, sent):
    answers = asked_directly(at(provider), sent)
    assert differences(answers, sent) == {}


async def batched(provider, sent: dict[str, Call]) -> list:
    """Every request in one batch of the harness's batch provider, polled until it ends: each request's
    answer ({"text", "tokens_in", "tokens_out"}) or error."""
    try:
        requests = [provider.request(call.text, call.schema) for call in sent.values()]
        name = await provider.create(requests, "every request shape")
        job = await provider.get(name)
        while provider.state(job) is None:
            job = await provider.get(name)
        return await provider.results(job, len(requests), name)
    finally:
        await provider.close()


@pytest.mark.parametrize("provider", [p for p, spec in launch.PROVIDERS.items()
                                      if provider_of(spec.models["DOCS_JUDGE"]) in batch.PROVIDERS])
def test_each_batch_api_answers_every_request_as_the_offline_judge_does(provider, at, sent):
    judge_name = at(provider)
    module, name = batch.PROVIDERS[provider_of(judge_name)].split(":")
    batches = getattr(importlib.import_module(f"whichstage.{module}"), name)(model_of(judge_name))
    results = asyncio.run(batched(batches, sent))
    answers = {key: call.schema.model_validate_json(found["text"]).model_dump() if found and "text" in found
               else found for (key, call), found in zip(sent.items(), results)}
    assert differences(answers, sent) == {}


# ---- which class a JSON schema names ---------------------------------------------------------------------

@pytest.mark.parametrize("schema", list(judge_requests.known()), ids=lambda c: ".".join(request_kind(c)))
def test_each_schema_the_offline_judge_answers_is_named_by_its_own_json_schema(schema):
    assert judge_requests.schema_named(schema.model_json_schema()) is schema


def test_a_schema_without_titles_is_named_by_its_property_names_when_one_class_has_them():
    from deepeval.metrics.faithfulness.schema import Truths

    assert judge_requests.schema_named({"type": "object", "properties": {"truths": {"type": "array"}}}) is Truths


def test_a_schema_that_fits_several_classes_is_refused_naming_them():
    with pytest.raises(UnknownRequest, match="^no rule for a 'untitled {reason}' request: its schema fits "
                                             "faithfulness.FaithfulnessScoreReason, answer_relevancy"):
        judge_requests.schema_named({"properties": {"reason": {"type": "string"}}})


def test_a_schema_of_no_class_is_refused_naming_its_title():
    with pytest.raises(UnknownRequest, match="^no rule for a 'Tone' request: its schema is none the lexical"):
        judge_requests.schema_named({"title": "Tone", "properties": {"tone": {"type": "string"}}})

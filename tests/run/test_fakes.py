"""The fake models tests use (whichstage/testing/fakes.py): each model providers.py builds still answers, and its
calls are counted by kind and label, failed or answered as a test chooses."""
import pytest

from whichstage.providers import build as providers
from whichstage.testing.fakes import Call, installed


def ask(chat, question: str) -> str:
    from langchain_core.messages import HumanMessage

    return chat.invoke([HumanMessage(content=question)]).text


def test_every_kind_of_call_is_counted_by_its_label_and_still_answered(fake_models):
    from whichstage.judging.metrics import measure
    from whichstage.offline.hash_embedder import HashEmbeddings

    chat, embedder = providers.chat_model("rules"), providers.embedder("hash")
    assert ask(chat, "hello") and embedder.embed_query("tasks") == HashEmbeddings().embed_query("tasks")
    embedder.embed_documents(["one", "two"])
    assert fake_models.calls == [Call("chat", "hello", "hello", model="rules"),
                                 Call("embed", "query", "tasks", model="hash"),
                                 Call("embed", "documents", "one\n\ntwo", model="hash")]
    judged = measure("answer_relevancy", providers.judge_model("lexical"), "How do I sync?", "Run tracker sync.",
                     "", None)
    assert judged["score"] == 1.0 and fake_models.count("judge") == len(fake_models.calls) - 3 > 0
    assert {c.label.split("/")[0] for c in fake_models.calls[3:]} == {"answer_relevancy"}
    assert {c.model for c in fake_models.calls[3:]} == {"lexical"}
    assert (fake_models.count("embed"), fake_models.count(label="query")) == (2, 1)


def test_a_chosen_call_raises_the_chosen_error_and_is_not_counted(fake_models):
    fake_models.fail(lambda call: call.kind == "chat" and "sync" in call.label, TimeoutError("read timed out"))
    chat = providers.chat_model("rules")
    with pytest.raises(TimeoutError, match="read timed out"):
        ask(chat, "How does sync work?")
    assert ask(chat, "hello") and [c.label for c in fake_models.calls] == ["hello"]


def test_a_chosen_chat_call_gets_the_chosen_answer(fake_models):
    fake_models.reply(lambda call: call.label == "hello", "Probably.")
    chat = providers.chat_model("rules")
    assert ask(chat, "hello") == "Probably." and ask(chat, "thanks") != "Probably."
    assert fake_models.count("chat") == 2


def test_reset_forgets_the_calls_and_the_rules(fake_models):
    fake_models.fail(lambda call: True, TimeoutError())
    assert fake_models.reset() == []
    assert ask(providers.chat_model("rules"), "hello") and fake_models.count() == 1


def test_outside_the_block_models_are_built_as_they_are():
    with installed():
        assert len(providers.MODEL_HOOKS) == 1
    assert providers.MODEL_HOOKS == [] and type(providers.embedder("hash")).__name__ == "HashEmbeddings"


def test_runs_are_the_questions_of_each_runs_first_call_and_measurements_one_per_metric(sample_project,
                                                                                          fake_models):
    import json

    from whichstage.cli import run as evaluate
    from conftest import OFFLINE_RUN

    assert evaluate.main(["--live", "--rerecord", "--quiet"]) == 0
    entries = json.loads((sample_project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    traces = [e["value"] for n, e in entries.items() if n.startswith("agent/")]  # counterfactual runs too
    cases = {c["id"]: c["question"] for c in json.loads((sample_project / "cases.json").read_text())["cases"]}
    asked = [cases[n.split("/")[1].split("@")[0]] for n in entries if n.startswith("agent/")]
    assert sorted(fake_models.runs()) == sorted(asked) and len(asked) == len(traces)
    metrics = {"faithfulness_strict": "faithfulness", "abstained": "g_eval", "ignored_planted": "g_eval"}
    judged = [metrics.get(e["deps"]["metric"], e["deps"]["metric"]) for n, e in entries.items() if n.startswith("judge/")]
    assert sorted(fake_models.measurements()) == sorted(judged) and len(set(judged)) == 6


def test_a_rule_on_starts_run_stops_a_run_before_its_model_answers(fake_models):
    from whichstage.testing.fakes import starts_run

    fake_models.fail(starts_run, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        ask(providers.chat_model("rules"), "hello")
    assert fake_models.runs() == [] and fake_models.calls == []

"""Conversations: a case's `history`, the earlier turns the agent receives before the question. Every stage
scores the last turn; the judge reads the history where its metric reads the input; the history is part of
the trace's key."""
import copy
import json
from pathlib import Path

import pytest

from whichstage.cli import run as evaluate
from conftest import OFFLINE_RUN, copy_project, load_project, offline_inputs
from whichstage.agent import capture
from whichstage.model.errors import InputError
from whichstage.run.entries import field_hashes, judge_input

HISTORY = [{"role": "user", "content": "How do I archive a finished task?"},
           {"role": "assistant", "content": "Run tracker archive ID.",
            "tool_calls": [{"name": "search_docs", "args": {"query": "archive a task"},
                            "output": "[{\"id\": \"archive\", \"text\": \"tracker archive ID moves a task.\"}]"}]}]
FOLLOW_UP = {"id": "follow-up", "question": "And how do I undo that?", "history": HISTORY,
             "expected_tools": ["search_docs"], "expected_docs": ["archive"],
             "reference": "Run tracker restore ID to bring an archived task back."}


def with_case(folder: Path, case: dict) -> Path:
    path = folder / "cases.json"
    data = json.loads(path.read_text())
    data["cases"].append(case)
    path.write_text(json.dumps(data))
    return folder


class Seen:
    """A runnable that records the messages it was given and answers with one message."""

    def __init__(self):
        from langchain_core.messages import AIMessage
        from langchain_core.runnables import RunnableLambda

        self.given = []

        def answer(state):
            self.given = list(state["messages"])
            return {"messages": [*state["messages"], AIMessage(content="Run tracker restore ID.")]}
        self.runnable = RunnableLambda(answer)


def test_the_agent_receives_the_history_before_the_question_and_the_trace_is_the_last_turn():
    seen = Seen()
    trace = capture.run(seen.runnable, "And how do I undo that?", HISTORY)
    kinds = [(type(m).__name__, m.content) for m in seen.given]
    assert kinds == [("HumanMessage", "How do I archive a finished task?"), ("AIMessage", ""),
                     ("ToolMessage", HISTORY[1]["tool_calls"][0]["output"]), ("AIMessage", "Run tracker archive ID."),
                     ("HumanMessage", "And how do I undo that?")]
    assert seen.given[1].tool_calls[0]["name"] == "search_docs"
    assert trace["tool_calls"] == [] and trace["tool_outputs"] == [] and trace["answer"] == "Run tracker restore ID."


def test_the_judge_reads_the_conversation_where_its_metric_reads_the_input():
    assert judge_input({"question": "q"}) == "q"
    conversation = judge_input(FOLLOW_UP)
    assert conversation.splitlines() == ["User: How do I archive a finished task?",
                                         "Assistant: Run tracker archive ID.", "User: And how do I undo that?"]
    trace = {"answer": "a", "tool_calls": []}
    plain = field_hashes({**FOLLOW_UP, "history": []}, trace, [])
    followed = field_hashes(FOLLOW_UP, trace, [])
    assert plain["question"] != followed["question"]  # relevancy and the behaviour judgements see the history
    assert {f: plain[f] for f in ("answer", "context", "reference")} == \
        {f: followed[f] for f in ("answer", "context", "reference")}  # faithfulness does not


def test_the_history_is_part_of_the_traces_key(tmp_path, monkeypatch, capsys):
    project = with_case(copy_project(tmp_path), copy.deepcopy(FOLLOW_UP))
    monkeypatch.chdir(project)
    for name, value in {"DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical"}.items():
        monkeypatch.setenv(name, value)
    assert evaluate.main(["--project", str(project), "--live", "--quiet", "--case", "follow-up"]) == 0
    entries = json.loads((project / "recordings" / f"{OFFLINE_RUN}.json").read_text())["entries"]
    assert "history" in entries["agent/follow-up"]["deps"]
    data = json.loads((project / "cases.json").read_text())
    data["cases"][-1]["history"][0]["content"] = "How do I archive a task?"
    (project / "cases.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert evaluate.main(["--project", str(project), "--case", "follow-up"]) == 2
    assert "case follow-up (history changed" in capsys.readouterr().err


@pytest.mark.parametrize("history, message", [
    ([{"role": "user", "content": "Hi"}], "history: the last turn must be the assistant's"),
    ([{"role": "user", "content": "Hi", "tool_calls": [{"name": "search_docs"}]},
      {"role": "assistant", "content": "Hello"}], "history[0].tool_calls: only an assistant turn calls tools"),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "x", "tool_calls": [{"name": "web"}]}],
     "history[1].tool_calls[0].name: the agent has no tool 'web'"),
    ([{"role": "system", "content": "x"}, {"role": "assistant", "content": "y"}], "history[0].role"),
])
def test_a_history_that_cannot_be_is_refused_naming_the_turn(tmp_path, history, message):
    project = with_case(copy_project(tmp_path), {**copy.deepcopy(FOLLOW_UP), "history": history})
    with pytest.raises(InputError, match=r"cases\[\d+\] \(follow-up\)\." + message.replace("[", r"\[")
                       .replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        load_project(project)


def test_a_case_without_history_keeps_its_key(tmp_path):
    inputs = offline_inputs()
    case = inputs.cases["cases"][0]
    deps = inputs.agent_deps(case)({"tool_calls": []})
    assert "history" not in deps and "history" not in case

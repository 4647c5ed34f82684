"""The tools intervention: a case failing at tools runs again with its expected calls made for the agent
through its own tools (an action never runs), then left to answer; tool choice is the cause when the case
then passes. Recorded as an entry of its own and replayed without a model."""
from pathlib import Path

from conftest import OFFLINE, init_entries, init_row, recorded_init
from whichstage.cli import run as evaluate
from whichstage.scoring.diagnosis import calls_to_make

CASE = "order-status"


def row(folder: Path) -> dict:
    return init_row(folder, CASE, "all")


def entries(folder: Path) -> dict:
    return init_entries(folder)


def answers_unasked(fake_models) -> None:
    """The agent answers the order question at once, calling no tool; once a tool has answered it goes on."""
    def first_call(call):
        return call.kind == "chat" and "ORD-1002" in call.label and call.text == call.label
    fake_models.reply(first_call, "I cannot look that up.")


def replayed(folder: Path, monkeypatch) -> None:
    monkeypatch.chdir(folder)
    for name in OFFLINE:
        monkeypatch.delenv(name, raising=False)
    assert evaluate.main(["--split", "all", "--quiet"]) == 0


def test_a_case_that_passes_once_its_expected_calls_are_made_is_the_tool_choices(tmp_path, fake_models, monkeypatch):
    answers_unasked(fake_models)
    folder = recorded_init(tmp_path / "p", lambda folder, cases: None)
    replayed(folder, monkeypatch)
    found = row(folder)
    assert found["first_failure"] == "tools"
    assert found["tools_intervention"]["calls"] == [{"name": "get_order", "args": {"order_id": "ORD-1002"}}]
    assert found["diagnosis"]["cause"] == "tool choice"
    assert f"agent/{CASE}@expected-calls" in entries(folder)


def test_a_case_that_still_fails_with_its_calls_made_is_undetermined_saying_where(tmp_path, fake_models,
                                                                                     monkeypatch):
    answers_unasked(fake_models)

    def no_such_order(folder: Path, cases: dict) -> None:
        records = folder / "orders.json"
        records.write_text(records.read_text().replace("ORD-1002", "ORD-9999"))
    folder = recorded_init(tmp_path / "p", no_such_order)
    replayed(folder, monkeypatch)
    found = row(folder)
    assert found["diagnosis"]["cause"] == "undetermined"
    assert found["diagnosis"]["evidence"]["outcome"].startswith("with the expected calls made for it, the case "
                                                                "then fails at ")


def test_a_replay_of_the_intervention_calls_no_model(tmp_path, fake_models, monkeypatch):
    answers_unasked(fake_models)
    folder = recorded_init(tmp_path / "p", lambda folder, cases: None)
    fake_models.reset()
    replayed(folder, monkeypatch)
    assert fake_models.count() == 0 and row(folder)["diagnosis"]["cause"] == "tool choice"


def test_the_calls_take_the_cases_stated_arguments_over_the_agents_own():
    case = {"question": "q", "expected_tools": ["get_order"], "expected_args": {"get_order": {"order_id": "ORD-1"}}}
    made = [{"name": "get_order", "args": {"order_id": "ORD-2", "verbose": True}}]
    assert calls_to_make(case, made, {"get_order": {"order_id": str}}, []) == \
        ([{"name": "get_order", "args": {"order_id": "ORD-1", "verbose": True}}], "")


def test_a_retriever_never_called_searches_with_the_question():
    case = {"question": "How do I export?", "expected_tools": ["search_help"]}
    assert calls_to_make(case, [], {"search_help": {"query": str}}, ["search_help"]) == \
        ([{"name": "search_help", "args": {"query": "How do I export?"}}], "")


def test_a_call_whose_arguments_are_unknown_makes_the_intervention_unavailable():
    case = {"question": "q", "expected_tools": ["get_order"],
            "expected_args": {"get_order": {"order_id": {"contains": ["1"]}}}}
    calls, why = calls_to_make(case, [], {"get_order": {"order_id": str}}, [])
    assert calls is None and why.startswith("no arguments known for get_order")

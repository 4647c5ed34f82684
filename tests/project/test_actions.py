"""Action tools (`role = "action"`): proposed, never executed. A project of its own (made by `init`, with a
`send_refund` action that writes a file), run through the CLI with the offline backends as a user would."""
import json
from pathlib import Path

import pytest

from whichstage.cli import run as evaluate
from conftest import OFFLINE, PROJECT, load_project

RUN = "acme-notes+rules+hash+lexical"
REQUEST = "Please send a refund for order ORD-1001: the customer was charged twice."
PROPOSED = ("Not done: send_refund for order ORD-1001, the customer charged twice, awaits the user's confirmation; "
            "it has not been carried out.")

# Every kind of LangChain tool, each doing what an action does: a side effect (here, a file written).
REFUND_TOOLS = {
    "decorated": '''
    @tool
    def send_refund(order_id: str, reason: str) -> str:
        """Send a refund to the customer of an order: the money goes back to their card."""
        return refund(order_id, reason)
''',
    "structured": '''
    from langchain_core.tools import StructuredTool

    send_refund = StructuredTool.from_function(
        refund, name="send_refund", description="Send a refund to the customer of an order: the money goes back.")
''',
    "subclass": '''
    from langchain_core.tools import BaseTool
    from pydantic import BaseModel

    class RefundArgs(BaseModel):
        order_id: str
        reason: str

    class SendRefund(BaseTool):
        name: str = "send_refund"
        description: str = "Send a refund to the customer of an order: the money goes back to their card."
        args_schema: type = RefundArgs

        def _run(self, order_id: str, reason: str) -> str:
            return refund(order_id, reason)

    send_refund = SendRefund()
''',
}
CREATE_AGENT = "    return create_agent(model, tools=[search_help, get_order], system_prompt=PROMPT)\n"
TOOL_NODE_GRAPH = '''
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langchain_core.messages import SystemMessage

    tools = [search_help, get_order, send_refund]
    bound = model.bind_tools(tools)

    def call_model(state):
        return {"messages": [bound.invoke([SystemMessage(content=PROMPT), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()
'''


def write_project(folder: Path, kind: str = "decorated", graph: bool = False) -> Path:
    """`evaluate.py init` then a send_refund action tool of `kind`, declared role = "action", and its cases."""
    assert evaluate.main(["init", str(folder)]) == 0
    agent = (folder / "agent.py").read_text()
    agent = agent.replace("import json\n", "import json\nfrom pathlib import Path\n\nREFUNDS = "
                          "Path(__file__).with_name('refunds.log')\n\n\ndef refund(order_id: str, reason: str) -> str:\n"
                          "    with open(REFUNDS, 'a') as out:\n        out.write(f'{order_id}: {reason}\\n')\n"
                          "    return f'refunded {order_id}'\n", 1)
    ending = TOOL_NODE_GRAPH if graph else CREATE_AGENT.replace("get_order]", "get_order, send_refund]")
    agent = agent.replace(CREATE_AGENT, REFUND_TOOLS[kind] + ending)
    (folder / "agent.py").write_text(agent)
    with open(folder / "evals.toml", "a") as config:
        config.write('\n[tools.send_refund]\nrole = "action"\n')
    cases = json.loads((folder / "cases.json").read_text())
    cases["cases"] += [
        {"id": "refund", "question": REQUEST, "expected_tools": ["send_refund"],
         "expected_args": {"send_refund": {"order_id": "ORD-1001", "reason": {"contains": ["CHARGED", "twice"]}}},
         "reference": PROPOSED},
        {"id": "refund-wrong-reason", "question": REQUEST, "expected_tools": ["send_refund"],
         "expected_args": {"send_refund": {"reason": {"contains": ["charged twice", "duplicate"]}}},
         "reference": PROPOSED},
        {"id": "refund-unasked", "question": REQUEST, "expected_tools": ["get_order"],
         "reference": "Order ORD-1001, a Pro plan, is active."},
        {"id": "refund-in-small-talk", "question": "Thanks! " + REQUEST, "expected_behavior": "chitchat",
         "reference": "You're welcome!"},
    ]
    (folder / "cases.json").write_text(json.dumps(cases, indent=2))
    return folder


@pytest.fixture
def offline(monkeypatch):
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def refunds(tmp_path_factory) -> dict:
    """The project recorded once with --live, and its report of every case, by id."""
    folder = write_project(tmp_path_factory.mktemp("refunds") / "notes")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in OFFLINE.items():
            patch.setenv(name, value)
        assert evaluate.main(["--project", str(folder), "--live", "--quiet", "--split", "all"]) in (0, 1)
    report = json.loads((folder / "runs" / f"{RUN}.all.json").read_text())
    return {"folder": folder, "rows": {r["id"]: r for r in report["rows"]}}


def test_a_live_run_never_executes_the_action(refunds):
    assert refunds["rows"]["refund"]["calls"] == ["send_refund"]
    assert not (refunds["folder"] / "refunds.log").exists()


@pytest.mark.parametrize("kind,graph", [("structured", False), ("subclass", False), ("decorated", True)])
def test_no_kind_of_tool_nor_a_tool_node_graph_executes_the_action(tmp_path, offline, kind, graph):
    folder = write_project(tmp_path / "notes", kind, graph)
    assert evaluate.main(["--project", str(folder), "--live", "--quiet"]) in (0, 1)
    report = json.loads((folder / "runs" / f"{RUN}.json").read_text())
    assert next(r for r in report["rows"] if r["id"] == "refund")["calls"] == ["send_refund"]
    assert not (folder / "refunds.log").exists()


def test_the_same_agent_outside_the_harness_does_execute_it(tmp_path, offline):
    """The control: the proof above is not vacuous, the tool does write its file when it is run."""
    from whichstage.agent import factory as agent, capture

    folder = write_project(tmp_path / "notes")
    loaded = load_project(folder)
    values = agent.offline_values(loaded.project, loaded.pages, loaded.records)
    capture.run(agent.build_agent(loaded.project, values), REQUEST)
    assert (folder / "refunds.log").read_text() == "ORD-1001: the customer was charged twice.\n"


def test_the_trace_records_the_proposal(refunds):
    recording = json.loads((refunds["folder"] / "recordings" / f"{RUN}.json").read_text())
    trace = recording["entries"]["agent/refund"]["value"]
    assert trace["proposed"] == [{"tool": "send_refund",
                                  "args": {"order_id": "ORD-1001", "reason": "the customer was charged twice."}}]
    assert "awaits the user's confirmation" in trace["tool_outputs"][0]["content"]


def test_a_requested_action_with_the_right_arguments_passes(refunds):
    row = refunds["rows"]["refund"]
    assert row["tools"]["pass"] and row["first_failure"] is None


def test_a_wrong_argument_fails_naming_it(refunds):
    row = refunds["rows"]["refund-wrong-reason"]
    assert row["first_failure"] == "tools"
    assert row["tools"]["wrong_args"] == ["send_refund.reason: lacks 'duplicate' (expected text containing "
                                          "'charged twice', 'duplicate' (ignoring case))"]


def test_an_unasked_action_fails_the_case_at_tools(refunds):
    row = refunds["rows"]["refund-unasked"]
    assert row["first_failure"] == "tools"
    assert row["tools"]["reason"].startswith("an action nobody asked for was proposed: send_refund(")


def test_an_unasked_action_in_small_talk_fails_at_tools_not_behaviour(refunds):
    row = refunds["rows"]["refund-in-small-talk"]
    assert row["first_failure"] == "tools" and "an action nobody asked for" in row["tools"]["reason"]


def test_the_rules_model_does_not_act_on_a_question_about_the_action(refunds):
    assert refunds["rows"]["offline-edits"]["calls"] == ["search_help"]


# ---- the parts, alone --------------------------------------------------------------------------------------

def test_contains_matches_each_text_ignoring_case():
    from whichstage.scoring import matching

    rule = {"contains": ["Sync", "OFFLINE"]}
    assert matching.matches(rule, "sync crashes offline") and not matching.matches(rule, "sync crashes")
    assert not matching.matches(rule, 12)


def test_a_bad_contains_rule_is_refused_listing_the_rule_shapes():
    from whichstage.scoring import matching

    assert matching.rule_error({"contains": "offline"})[0] == "contains"
    key, message = matching.rule_error({"contains": ["x"], "equals": "y"})
    assert key == "" and "contains takes no other key" in message
    assert '{"contains": ["...", ...]}' in matching.rule_error({"has": 1})[1]


def test_the_unasked_rule_holds_in_every_mode():
    from whichstage.scoring.tools import tool_verdict

    calls = [{"name": "search", "args": {}}, {"name": "refund", "args": {"order": "A-1"}}]
    verdict = tool_verdict(calls, ["search"], {"score": 1.0, "reason": ""}, mode="superset", actions=["refund"])
    assert not verdict["pass"]
    assert verdict["reason"] == "an action nobody asked for was proposed: refund(order='A-1')"


@pytest.mark.parametrize("message,acts", [
    ("Please open a ticket: the export drops due dates.", True),
    ("Could you file a bug report about tags vanishing after import?", True),
    ("How do I file a bug report?", False),
    ("My sync fails offline. Is that a known bug?", False),
    ("Bug #240 says week_start is ignored. What values does it take?", False),
    ("Please report a bug: tags vanish after import.", True),
])
def test_the_rules_model_proposes_an_action_asked_for_in_plain_words(message, acts):
    from whichstage.offline.actions import requested_actions

    tool = {"role": "action", "description": "File a bug report: open a new issue with a title and a body.",
            "arguments": {"title": "string", "body": "string"}}
    assert bool(requested_actions(message, {"file_bug_report": tool})) is acts


def test_an_action_role_takes_no_other_key(tmp_path):
    from conftest import refusal

    folder = write_project(tmp_path / "notes")
    with open(folder / "evals.toml", "a") as config:
        config.write('records = "orders.json"\n')
    assert refusal(folder) == ("evals.toml: tools.send_refund.records: unknown key for an action (valid: role)")


def test_the_bundled_example_proposes_a_bug_report_only_when_asked():
    report = json.loads((PROJECT / "runs" / "docs-assistant+rules+hash+lexical.json").read_text())
    rows = {r["id"]: r for r in report["rows"]}
    assert rows["file-bug"]["calls"] == ["file_bug_report"] and rows["file-bug"]["first_failure"] is None
    assert "file_bug_report" not in rows["locked-not-a-bug"]["calls"]
    assert rows["locked-not-a-bug"]["first_failure"] is None

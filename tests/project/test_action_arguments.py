"""The `rules` model's values for an action's arguments: an identifier-like string argument is told apart by
what the tool and the question hold (a lookup keyed by it, its schema's pattern or description), not by its name."""
from typing import Annotated

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from pydantic import Field

from whichstage.offline.actions import requested_actions
from whichstage.offline.models import RulesChatModel

DESCRIPTION = "Book a technician visit to repair a device at the customer's home."
REQUEST = "Please book a technician visit: since firmware v12 the router NN-7730 reboots every night."


def visit(**schemas: dict) -> dict:
    """The book_visit action as the rules model is told it, `serial` with the JSON schema `schemas` give."""
    return {"role": "action", "description": DESCRIPTION, "arguments": {"serial": "string", "problem": "string"},
            "schemas": {"serial": {"type": "string", **schemas.get("serial", {})}, "problem": {"type": "string"}}}


def proposed(message: str, tools: dict) -> dict:
    (call,) = requested_actions(message, tools)
    return call["args"]


def test_an_argument_a_lookup_is_keyed_by_gets_the_record_key_the_message_names():
    device = {"role": "lookup", "key": "serial", "keys": ["NN-7730", "NN-8120"], "arguments": {"serial": "string"}}
    assert proposed(REQUEST, {"get_device": device, "book_visit": visit()})["serial"] == "NN-7730"  # not v12


def test_a_free_text_argument_beside_it_still_gets_the_requests_detail():
    device = {"role": "lookup", "key": "serial", "keys": ["NN-7730"], "arguments": {"serial": "string"}}
    message = "My router NN-7730 drops Wi-Fi every evening. Please book a technician visit: it began last week."
    assert proposed(message, {"get_device": device, "book_visit": visit()})["problem"] == "it began last week."


def test_an_argument_with_a_pattern_gets_the_first_token_it_matches():
    tools = {"book_visit": visit(serial={"pattern": r"^[A-Z]{2}-\d{4}$"})}
    assert proposed(REQUEST, tools)["serial"] == "NN-7730"


def test_an_argument_whose_pattern_no_token_matches_is_left_out():
    tools = {"book_visit": visit(serial={"pattern": r"^SN\d{8}$"})}
    assert "serial" not in proposed(REQUEST, tools)


def test_an_argument_whose_description_gives_an_example_gets_a_token_of_its_shape():
    tools = {"book_visit": visit(serial={"description": "The router's serial, such as AB-1234."})}
    assert proposed(REQUEST, tools)["serial"] == "NN-7730"


def test_an_argument_described_as_a_number_gets_a_token_with_a_digit():
    tools = {"book_visit": visit(serial={"description": "The serial number printed under the router."})}
    assert proposed("Please book a technician visit: router NN-7730 reboots every night.", tools)["serial"] == \
        "NN-7730"


def test_the_rules_model_reads_the_pattern_from_the_bound_tools_schema():
    @tool
    def book_visit(serial: Annotated[str, Field(pattern=r"^[A-Z]{2}-\d{4}$")], problem: str) -> str:
        """Book a technician visit to repair a device at the customer's home."""
        return "booked"

    model = RulesChatModel(roles={"book_visit": {"role": "action"}}).bind_tools([book_visit])
    (call,) = model.invoke([HumanMessage(REQUEST)]).tool_calls
    assert call["args"]["serial"] == "NN-7730"

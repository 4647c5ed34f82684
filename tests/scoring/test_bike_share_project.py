"""The offline rules agent on a project of the tests' own: a bike-share help desk whose search returns plain
text naming its markdown pages (read through its `ids` pattern) and whose lookup takes an integer ride number.
The judge gets each page alone, a ride named without a hash is looked up, and an answer drawn from markdown
pages carries no markdown."""
import json
import re
from pathlib import Path

import pytest

from conftest import offline_inputs, BIKE_GUIDE as GUIDE


EVALS_TOML = '''agent = "bikes_agent:build"
cases = "cases.json"
pages = "guide/*.md"
k = 2

[tools.find_guides]
role = "retriever"
ids = 'Source: (guide/[\\w-]+\\.md)'

[tools.get_ride]
role = "lookup"
records = "rides.json"
key = "ride_id"
'''

AGENT = '''import json


def build(model, pages: list, records: dict):
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    @tool
    def find_guides(query: str) -> str:
        """Search the bike-share guide; each page is followed by its source."""
        asked = set(query.lower().split())
        ranked = sorted(pages, key=lambda p: -len(asked & set(p.page_content.lower().split())))
        return "\\n\\n".join(f"{p.page_content.strip()}\\nSource: {p.id}" for p in ranked[:2])

    @tool
    def get_ride(ride_id: int) -> str:
        """Look up a ride by its number: its bike, its minutes and its fare."""
        found = records["get_ride"].get(str(ride_id))
        return json.dumps({"ride": ride_id, **found}) if found else f"no ride {ride_id}"

    return create_agent(model, tools=[find_guides, get_ride],
                        system_prompt="You answer questions about `Pedal`, a bike-share service.")
'''

RIDES = {"9999": {"bike": "B-17", "minutes": 42, "fare": "5.20 EUR"}, "1204": {"bike": "B-3", "minutes": 7}}
CASES = {"name": "pedal", "version": 1, "cases": [{"id": "unlock", "question": "How do I unlock a bike?",
                                     "expected_docs": ["guide/unlock.md"], "reference": "Scan the QR code."}]}


@pytest.fixture(scope="module")
def bikes(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pedal")
    files = {"evals.toml": EVALS_TOML, "bikes_agent.py": AGENT, "rides.json": json.dumps(RIDES),
             "cases.json": json.dumps(CASES), **GUIDE}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def pedal(bikes):
    """Ask the bike-share agent, built with the offline rules model: (its trace, the trace read by role)."""
    from whichstage.agent.factory import builder
    from whichstage.agent.capture import run

    inputs = offline_inputs(bikes)
    agent = builder(inputs, "rules", "hash")()

    def ask(question: str) -> tuple[dict, dict]:
        trace = run(agent, question)
        return trace, inputs.view(trace)
    return ask


def test_an_agent_whose_search_names_its_pages_in_text_gives_the_judge_each_page_alone(pedal):
    _, view = pedal("How do I unlock a bike when the lock stays shut?")
    assert view["retrieved"][0] == "guide/unlock.md" and len(view["retrieved"]) == 2
    assert len(view["context"]) == 2
    assert view["context"][0].startswith("# Unlocking a bike") and view["context"][0].endswith(
        "Source: guide/unlock.md")
    assert view["retrieved"][1] in view["context"][1] and "Unlocking" not in view["context"][1]


def test_the_agent_looks_up_a_ride_named_without_a_hash(pedal):
    trace, view = pedal("How long was ride 4321?")
    assert trace["tool_calls"] == [{"name": "get_ride", "args": {"ride_id": 4321}}]
    assert view["looked_up"] == [("get_ride", "4321")] and trace["answer"] == "no ride 4321"


MARKDOWN = re.compile(r"(?:^|\s)(?:#{1,6}|>|[-*+]|\d+[.)])\s|```|^\s*\|", re.MULTILINE)


def test_an_answer_drawn_from_markdown_pages_carries_no_markdown_block_syntax(pedal):
    trace, _ = pedal("The lock stays shut when I unlock a bike: should I turn Bluetooth on?")
    assert "Turn Bluetooth on, then scan again." in trace["answer"], trace["answer"]
    assert not MARKDOWN.search(trace["answer"]), trace["answer"]

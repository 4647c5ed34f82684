"""A retriever read through its `ids` pattern gives the judge one node per page: ids that open their pages,
ids that close them, and ids on one line."""
from conftest import BIKE_GUIDE as GUIDE
from whichstage.project.config import ToolRole
from whichstage.agent.reading import read


FINDS = {"find_guides": ToolRole("find_guides", "retriever", ids=r"(guide/[\w-]+\.md)")}
CORPUS = set(GUIDE)


def context_of(content: str) -> list[str]:
    trace = {"tool_calls": [{"name": "find_guides", "args": {"query": "q"}}],
             "tool_outputs": [{"tool": "find_guides", "content": content}]}
    return read(trace, FINDS, CORPUS)["context"]


def test_ids_that_open_their_pages_split_the_output_into_one_node_per_page():
    content = ("Two pages found:\n\n[guide/unlock.md] Unlocking a bike\nScan the QR code.\n\n"
               "[guide/fares.md] Fares\nA ride costs one euro.")
    assert context_of(content) == ["Two pages found:\n\n[guide/unlock.md] Unlocking a bike\nScan the QR code.",
                                   "[guide/fares.md] Fares\nA ride costs one euro."]


def test_ids_that_close_their_pages_end_each_node_at_its_id():
    content = "Scan the QR code.\nSource: guide/unlock.md\n\nA ride costs one euro.\nSource: guide/fares.md\n"
    assert context_of(content) == ["Scan the QR code.\nSource: guide/unlock.md",
                                   "A ride costs one euro.\nSource: guide/fares.md"]


def test_ids_on_one_line_split_that_line_at_each_id():
    assert context_of("See guide/unlock.md for unlocking and guide/fares.md for prices.") == \
        ["See guide/unlock.md for unlocking and", "guide/fares.md for prices."]

"""The offline rules model's answers carry no markdown block syntax: a page's headings, list markers, quotes and
tables never reach the answer."""
import re

from whichstage.offline.answers import extractive_answer


MARKDOWN = re.compile(r"(?:^|\s)(?:#{1,6}|>|[-*+]|\d+[.)])\s|```|^\s*\|", re.MULTILINE)


def test_a_pages_headings_list_markers_and_quotes_never_reach_the_answer():
    from langchain_core.messages import ToolMessage

    page = ("# Fares\n\n## Day passes\n\n> A ride over two hours is charged a day pass.\n\n"
            "1. Open the app.\n2. Tap Passes to buy a day pass.\n\n| Pass | Price |\n|---|---|\n| day pass | 9 EUR |\n")
    answer = extractive_answer("How much is a day pass?", [ToolMessage(page, tool_call_id="1", name="find")],
                               "How much is a day pass?", "Pedal", {"find": "retriever"})
    assert "day pass" in answer and not MARKDOWN.search(answer), answer

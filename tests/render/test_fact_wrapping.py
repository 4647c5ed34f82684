"""A fact verdict `--show` wraps still reads as one fact: its next line indented, never a new bullet."""
from whichstage.render import case_text as show
from whichstage.testing import make_row


CHUNKED = ["guides/cancelling.md", "guides/cancelling.md", "guides/returns.md", "guides/damage.md"]


def row_of(**fields) -> dict:
    """A scored row of one retriever call that returned CHUNKED, expecting guides/damage.md (third, at k = 3)."""
    call = {"name": "lookup_guides", "args": {"query": "train"}}
    return make_row(**{"id": "dedup-rank", "question": "Can I take a rental bike on the train?", "category": "probe",
                       "expected_tools": ["lookup_guides"], "tool_calls": [call], "expected_docs": ["guides/damage.md"],
                       "searches": [CHUNKED], **fields})


def shown(row: dict) -> str:
    trace = {"tool_calls": [{"name": "lookup_guides", "args": {"query": "train"}}],
             "tool_outputs": [{"tool": "lookup_guides", "content": "four chunks"}], "answer": "No."}
    view = {"searches": row["searches"], "retrievers": ["lookup_guides"]}
    return show.text(row, trace, view, "rules")


def test_a_long_fact_verdict_wraps_onto_an_indented_line_not_a_new_bullet():
    fact = {"fact": "A late return costs 2 euros for every 15 minutes", "covered": True,
            "reason": "Stated in 'A late return costs 2 euros for every 15 minutes past the booked end time.'"}
    row = row_of(judged={"facts": {"score": 1.0, "reason": "every expected fact is stated", "facts": [fact]}})
    lines = shown(row).splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("- covered: A late return"))
    assert lines[at + 1].startswith("        ") and not lines[at + 1].lstrip().startswith("- ")
    assert sum(line.lstrip().startswith("- ") for line in lines) == 1

"""A fact verdict `--show` wraps still reads as one fact: its next line indented, never a new bullet."""
from conftest import chunked_row as row_of, shown_chunked as shown


def test_a_long_fact_verdict_wraps_onto_an_indented_line_not_a_new_bullet():
    fact = {"fact": "A late return costs 2 euros for every 15 minutes", "covered": True,
            "reason": "Stated in 'A late return costs 2 euros for every 15 minutes past the booked end time.'"}
    row = row_of(judged={"facts": {"score": 1.0, "reason": "every expected fact is stated", "facts": [fact]}})
    lines = shown(row).splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("- covered: A late return"))
    assert lines[at + 1].startswith("        ") and not lines[at + 1].lstrip().startswith("- ")
    assert sum(line.lstrip().startswith("- ") for line in lines) == 1

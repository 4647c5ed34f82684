"""Which case an imported trace is of: the case its metadata names by id (a `case_id` in a span's or a run's
metadata, the JSONL's `id`), else the case whose question is the trace's once whitespace is normalised. A
trace that matches no case gets a draft id of its own (the id it names when that is free, else `imported-`
and its trace id), for a draft case linked to it. Pure."""
import re
from typing import Optional

from whichstage.traces.mapping import Imported

SAFE = re.compile(r"[A-Za-z0-9._-]+")  # a case id (project/validate.py's ID_RULE)


def normalised(question: str) -> str:
    return " ".join(question.split())


class Matcher:
    """The cases by id and by normalised question (the first case of each question), and the draft ids given."""

    def __init__(self, cases: list[dict]):
        self.by_id = {c["id"]: c for c in cases}
        self.by_question: dict[str, dict] = {}
        for case in cases:
            self.by_question.setdefault(normalised(case["question"]), case)
        self.drafted: set[str] = set()

    def case(self, found: Imported) -> Optional[dict]:
        """The case the trace is of, or None."""
        if found.case is not None and found.case in self.by_id:
            return self.by_id[found.case]
        return self.by_question.get(normalised(found.question))

    def draft_id(self, found: Imported) -> str:
        """A fresh case id for the trace's draft: the id its metadata names, when free, else from its trace id."""
        wanted = found.case if found.case and SAFE.fullmatch(found.case) and not found.case.startswith(".") \
            else "imported-" + re.sub(r"[^A-Za-z0-9._-]", "-", found.source["trace_id"])[:40]
        given, n = wanted, 1
        while given in self.by_id or given in self.drafted:
            n += 1
            given = f"{wanted}-{n}"
        self.drafted.add(given)
        return given

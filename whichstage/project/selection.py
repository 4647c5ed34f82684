"""Which cases a run covers: `--case ID` (repeatable, a glob such as `issue-*`) and `--shard I/N` (a fixed
slice chosen by a stable hash of the case id, so adding cases never moves the others), and which split of
them it reports. Pure.
"""
import fnmatch
import hashlib
import re
from typing import Optional
from whichstage._util.exits import WhichstageError
from whichstage.model.dicts import CaseSetDict

SHARD = re.compile(r"^([1-9][0-9]{0,5})/([1-9][0-9]{0,5})$")  # at most 999,999 shards: an int Python reads


class SelectionError(WhichstageError, ValueError):
    """A --case or --shard that selects nothing, or is not of its form."""


def parse_shard(text: str) -> tuple[int, int]:
    """'2/4' -> (2, 4): the second of four shards, numbered from 1."""
    found = SHARD.match(text or "")
    if not found or int(found.group(1)) > int(found.group(2)):
        shown = text if len(text or "") <= 40 else f"{text[:40]}..."
        raise SelectionError(f"--shard {shown!r}: expected I/N with 1 <= I <= N < 1,000,000, such as 1/4")
    return int(found.group(1)), int(found.group(2))


def shard_of(case_id: str, shards: int) -> int:
    """The shard (1..shards) a case belongs to: the SHA-256 of its id, modulo the number of shards."""
    return int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:8], "big") % shards + 1


def select(cases: CaseSetDict, patterns: Optional[list[str]] = None, shard: Optional[tuple[int, int]] = None,
           flag: str = "--case") -> CaseSetDict:
    """The case set with only the cases the patterns match (each pattern must match one) and in the shard;
    `flag` is the option the patterns came from, for the message."""
    chosen = cases["cases"]
    for pattern in patterns or []:
        if not any(fnmatch.fnmatchcase(c["id"], pattern) for c in chosen):
            listed = ", ".join(c["id"] for c in cases["cases"][:8]) + (", ..." if len(cases["cases"]) > 8 else "")
            raise SelectionError(f"{flag} {pattern!r}: no case matches (the cases: {listed})")
    if patterns:
        chosen = [c for c in chosen if any(fnmatch.fnmatchcase(c["id"], p) for p in patterns)]
    if shard:
        chosen = [c for c in chosen if shard_of(c["id"], shard[1]) == shard[0]]
    return {**cases, "cases": chosen}


def report_split(split: Optional[str], chosen: Optional[CaseSetDict], patterns: Optional[list[str]] = None) -> str:
    """The split a run reports: the one asked for (default dev). With `chosen`, the cases --case `patterns`
    chose, and no split asked: every chosen case when one is named exactly (not by a glob) and held out, or
    when none is a dev case, since the split never hides a case named; else dev, so a glob does not show
    held-out cases by the way. A split asked for that holds none of the chosen cases is refused."""
    if chosen is None or split == "all":
        return split or "dev"
    if split is None:
        named = set(patterns or [])
        shown = any(c["split"] != "dev" and c["id"] in named for c in chosen["cases"])
        return "all" if shown or all(c["split"] != "dev" for c in chosen["cases"]) else "dev"
    if not any(c["split"] == split for c in chosen["cases"]):
        ids = ", ".join(f"{c['id']} ({c['split']})" for c in chosen["cases"][:8])
        raise SelectionError(f"--case: none of the chosen cases is in the {split} split ({ids}); "
                             "drop --split to report them")
    return split


def case_of(entry: str) -> str:
    """The case an entry belongs to: 'judge/backup@expected-pages/faithfulness' -> 'backup'."""
    part = entry.split("/", 2)[1] if entry.count("/") else entry
    return re.split(r"[@#]", part, maxsplit=1)[0]

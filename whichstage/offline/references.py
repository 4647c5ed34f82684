"""Which records a message refers to, for the `rules` model's lookups: the keys it mentions as whole words,
and for an integer key the numbers it introduces as references to the record (after one of the record's
nouns, or a bare '#N'), never a quantity or a version."""
import re
from typing import Any, Sequence

from whichstage.offline.actions import SYNONYMS
from whichstage.offline.arguments import name_words
from whichstage.offline.words import content

# A number introduced as a reference to a record: after one of the record's nouns ('ride 9999', 'ride #9999',
# 'ride no. 9999', 'ride number 9999', 'ride id 9999', 'ride_id: 9999'; a singular noun takes one number, or
# '#'-numbers joined by and / or / commas; a plural any list of numbers), or a bare '#N'. A number running on
# into '.digit' is a version, not a reference.
_N = r"\d+\b(?!\.\d)"
_JOIN = r"\s*(?:,|\band\b|\bor\b|&)\s*"
_NUMBERED = r"(?:[\s_-]*(?:number|num|no|nr|id)\b\.?)?\s*[:#=]?\s*"
BARE_REFERENCE = re.compile(rf"(?<![\w&#/])#{_N}")
# The words of a lookup's name and key argument that do not name its record: verbs and numbering words.
NOT_NOUNS = frozenset("get fetch find look lookup read load show query retrieve by for of id ids key number num "
                      "no nr code".split())
# The word before a verb: a subject pronoun, 'to', a modal or 'please' ('can I ride 20 km', 'to order 3').
VERB_CUES = frozenset("i you we they he she to can could will would shall should must may might please let's "
                      "don't didn't won't cannot can't".split())
# A clause made only of these words (or the record's nouns) asks about the referenced record itself, which
# the lookup answers.
RECORD_TOPIC = content("fix fixed fixes version released release status state open closed resolved still yet "
                       "now merged shipped")


def record_nouns(tool: str, key: str) -> list[str]:
    """The nouns a person names a lookup's record by: the words of its key argument and of its name that are
    not verbs or numbering words (get_ride(ride_id) -> ride; get_issue(number) -> issue), with their
    synonyms (SYNONYMS: an issue is also a bug or a ticket)."""
    found = {w for w in name_words(key) + name_words(tool) if w.isalpha() and w not in NOT_NOUNS}
    return sorted(found.union(*(group for group in SYNONYMS if group & found)))


def before_a_verb(text: str) -> bool:
    """Does the text end with a word that comes before a verb (VERB_CUES), so that the next word is a verb?"""
    last = re.findall(r"[a-z']+", text.lower().replace("\u2019", "'"))[-1:]
    return bool(last) and last[0] in VERB_CUES


def plurals(noun: str) -> set[str]:
    """A noun's plural forms: rides, boxes, companies."""
    return {noun + "s", noun + "es"} | ({noun[:-1] + "ies"} if noun.endswith("y") else set())


def noun_references(text: str, nouns: Sequence[str]) -> list[tuple[int, int, list[int]]]:
    """Where the text introduces numbers after one of the nouns, as (start, end, numbers); a noun used as a
    verb ('can I ride 20 km', 'to order 3') introduces a quantity, not a record (before_a_verb)."""
    if not nouns:
        return []
    singular = "|".join(sorted(map(re.escape, nouns), key=len, reverse=True))
    plural = "|".join(sorted(map(re.escape, set().union(*map(plurals, nouns))), key=len, reverse=True))
    pattern = re.compile(rf"\b(?:{plural})(?![a-z]){_NUMBERED}{_N}(?:{_JOIN}#?\s*{_N})*"
                         rf"|\b(?:{singular})(?![a-z]){_NUMBERED}{_N}(?:{_JOIN}#\s*{_N})*", re.IGNORECASE)
    return [(m.start(), m.end(), [int(n) for n in re.findall(r"\d+", m.group(0))])
            for m in pattern.finditer(text or "") if not before_a_verb(text[:m.start()])]


def referenced_numbers(text: str, nouns: Sequence[str], others: Sequence[str] = ()) -> list[int]:
    """The numbers the text introduces as references to a record named by `nouns`, in order, each once: after
    one of those nouns, or a bare '#N' that is not after another record's noun (`others`)."""
    own = noun_references(text, nouns)
    taken = own + noun_references(text, list(others))
    bare = [(m.start(), m.end(), [int(m.group(0)[1:])]) for m in BARE_REFERENCE.finditer(text or "")
            if not any(start <= m.start() < end for start, end, _ in taken)]
    return list(dict.fromkeys(n for _, _, numbers in sorted(own + bare) for n in numbers))


def key_pattern(key: str) -> re.Pattern:
    """A key as a whole word: not inside another word, an identifier or a version number (2.4.1)."""
    return re.compile(rf"(?<![\w-])(?<!\d\.){re.escape(key)}(?![\w-]|\.\d)", re.IGNORECASE)


def mentioned_keys(text: str, keys: list[str], integer: bool, nouns: Sequence[str] = (),
                   others: Sequence[str] = ()) -> list[Any]:
    """The record keys the text mentions, in the order it mentions them; for an integer key also the numbers
    it introduces as references to the record's `nouns` (see referenced_numbers; even those no record has:
    the lookup then says so)."""
    found = sorted((m.start(), key) for key in keys for m in [key_pattern(key).search(text or "")] if m)
    mentioned = [key for _, key in found]
    if integer:
        numbers = [str(n) for n in referenced_numbers(text, list(nouns), list(others))]
        mentioned = [k for k in dict.fromkeys(numbers + mentioned) if k.lstrip("-").isdigit()]
        return [int(k) for k in mentioned]
    return list(dict.fromkeys(mentioned))


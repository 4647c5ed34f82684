"""The lexical judge's verdict on an expected fact (whichstage/judging/facts.py, schema Verdicts; the facts and the
answer are read from the JSON under its Input header). A fact is covered when one sentence of the answer, or
one clause of it (words.parts, also split at ':' and ','),
  (1) holds at least SUPPORTED of the fact's content words, (2) holds each of the fact's numbers with every
  part of its unit near it: the word right after the number ('30 days'; in the answer within two words,
  '30 business days') and each rate that follows ('9 euros per hour', '$59 a month', 'for each hour',
  '9 euros/h': per, a, an, each, every and '/' read alike, h, min, d... as hour, minute, day...), so
  '9 euros per day' does not state '9 euros per hour'; a version or an id (2.4.1, ORD-1001) has no unit,
  (3) negates no more than the fact does (NEGATION words, counted in that clause: '..., not to the
  terminal' denies nothing before its comma) and (4) hedges no more than the fact does (HEDGE and DISOWN
  words, counted in the whole sentence: 'I think' or "I don't know" in another clause of it qualifies it
  too; a hint is not a statement). An answer with a sentence that only disowns it ('I don't know', 'but
  honestly, I'm not sure': DISOWN with no content word of its own beyond FILLER) covers no fact: a reader
  cannot rely on what the answer itself does not.
"""
import re

from whichstage.offline.rag_verdicts import SUPPORTED
from whichstage.offline.reasons import missing, quote
from whichstage.offline.words import STOPWORDS, content, coverage, parts, sentences, stem, words

# Facts: words that deny what a sentence says, that weaken it to a hint, and that disown a whole answer.
# (a word, never part of a name: --no-expiry denies nothing)
NEGATION = re.compile(r"(?<![\w-])(?:not|no|never|none|nothing|neither|nor|cannot|\w+n't)(?![\w-])", re.IGNORECASE)
HEDGE = re.compile(r"\b(?:maybe|perhaps|probably|possibly|presumably|might|likely|somewhere|somehow|something\s+like|"
                   r"some\s+kind\s+of|i\s+think|i\s+believe|i\s+guess|i\s+suppose|seems?)\b", re.IGNORECASE)
DISOWN = re.compile(r"\bi\s+(?:do\s+not|don't|really\s+don't)\s+(?:really\s+)?know\b|\bi'?m\s+not\s+(?:sure|certain)\b"
                    r"|\bi\s+am\s+not\s+(?:sure|certain)\b|\bno\s+idea\b|\bnot\s+sure\b", re.IGNORECASE)
FILLER = frozenset("honest honestly really actually though anyway but sorry frankly truth tell".split())
UNIT_GAP = 2  # content words after a number where the answer may give its unit ('30 business days')
QUANTITY = re.compile(r"[$\u20ac\u00a3]?[0-9]+(?:[.,][0-9]+)?%?")
# A rate after a number's unit ('9 euros per hour', '$59 a month', 'for each hour'), and its written forms.
RATE_WORDS = frozenset("per a an each every".split())
SLASH_RATE = re.compile(r"(?<![\w.-])([$\u20ac\u00a3]?[0-9][0-9.,]*%?(?:\s*[^\s\d/]+)?)\s*/\s*(?=[^\W\d_])")
UNIT_ABBREVIATIONS = {"h": "hour", "hr": "hour", "hrs": "hour", "min": "minute", "mins": "minute", "s": "second",
                      "sec": "second", "secs": "second", "d": "day", "wk": "week", "mo": "month", "yr": "year"}


def spelled_rates(text: str) -> str:
    """The text with a rate written with a slash after a number spelled with 'per' ('9 €/h': '9 € per h')."""
    return SLASH_RATE.sub(r"\1 per ", text.replace("\u2019", "'"))


def unit_word(word: str) -> bool:
    return word.isalpha() and word not in STOPWORDS and word not in RATE_WORDS


def measure(found: list[str], at: int, gap: int) -> tuple[list[str], list[str]]:
    """The unit of the number at found[at] (the content words right after it, up to `gap`) and its rates:
    each word after 'per', 'a', 'an', 'each' or 'every' ('for' allowed before) that follows."""
    i, units, rates = at + 1, list[str](), list[str]()
    while i < len(found) and len(units) < gap and unit_word(found[i]):
        units, i = units + [unit_stem(found[i])], i + 1
    while True:
        j = i + (found[i:i + 1] == ["for"])
        if not (j + 1 < len(found) and found[j] in RATE_WORDS and unit_word(found[j + 1])):
            return units, rates
        rates, i = rates + [unit_stem(found[j + 1])], j + 2


def unit_stem(word: str) -> str:
    return stem(UNIT_ABBREVIATIONS.get(word, word))


def quantities(text: str, gap: int) -> list[tuple[str, list[str], list[str]]]:
    """Each number of the text (a word with a digit: 30, $59, 2.4.1, ORD-1001) with its unit and rates
    (measure); a version or an id (anything QUANTITY does not match) has neither."""
    found = words(spelled_rates(text))
    return [(w, *(measure(found, i, gap) if QUANTITY.fullmatch(w) else ([], [])))
            for i, w in enumerate(found) if any(c.isdigit() for c in w)]


def states_quantities(fact: str, text: str) -> list[str]:
    """The fact's numbers (with their units and rates) that the text does not state; [] when it states them
    all: the same number, with every part of the fact's unit near it (the unit in UNIT_GAP words, each rate)."""
    said = quantities(text, UNIT_GAP)
    return [" ".join([n, *units, *(f"per {r}" for r in rates)]) for n, units, rates in quantities(fact, 1)
            if not any(m == n and set(units) <= set(u) and set(rates) <= set(r) for m, u, r in said)]


def counted(pattern: re.Pattern, text: str) -> int:
    return len(pattern.findall(text.replace("\u2019", "'")))


def disowns(sentence: str) -> bool:
    """A sentence that only says the speaker does not know, naming nothing: it disowns the whole answer."""
    plain = sentence.replace("\u2019", "'")
    return bool(DISOWN.search(plain)) and content(DISOWN.sub(" ", plain)) <= FILLER


def qualifiers(text: str) -> int:
    """How many hedges and disowning words ('I think', "I don't know") a text holds."""
    return counted(HEDGE, text) + counted(DISOWN, text)


def fact_pieces(answer: str) -> list[tuple[str, str]]:
    """Where a fact may be stated, each with its sentence: each sentence of the answer, and each clause of one
    (words.parts, and at ':' and ','), so that a denial after a comma ('..., not to the terminal') stays out
    of the clause before."""
    found = []
    for s in sentences(answer):
        found += [(p, s) for p in [s] + [p.strip() for part in parts(s) for p in re.split(r"[:,]", part) if p.strip()]]
    return list(dict.fromkeys(found))


def fact_words(text: str) -> set[str]:
    """The content words of a fact or a piece, a slashed rate read as one with 'per' ('euros/h': euros per h)."""
    return content(spelled_rates(text))


def unstated(fact: str, piece: str, sentence: str) -> str:
    """Why this piece of the answer (in this sentence) does not state the fact (the rules in the module
    docstring); '' if it does. A hedge or disowning words anywhere in the sentence qualify every clause of it."""
    wanted, said = fact_words(fact), fact_words(piece)
    share = coverage(wanted, said)
    if share < SUPPORTED:
        return f"the closest, '{quote(piece)}', holds {share:.0%} of its words; not found: {missing(wanted, said)}"
    wrong = states_quantities(fact, piece)
    if wrong:
        return f"'{quote(piece)}' does not state {', '.join(wrong)}"
    if counted(NEGATION, piece) > counted(NEGATION, fact):
        return f"'{quote(piece)}' negates it"
    if qualifiers(sentence) > qualifiers(fact):
        return f"'{quote(sentence)}' only hedges it"
    return ""


def fact_verdict(fact: str, answer: str) -> dict:
    """One fact's verdict on the whole answer: the first piece, most of the fact's words first, that states it."""
    disowning = next((s for s in sentences(answer) if disowns(s)), None)
    if disowning:
        return {"reason": f"The answer disowns what it says: '{quote(disowning)}'.", "covered": False}
    pieces = sorted(fact_pieces(answer), key=lambda p: -coverage(fact_words(fact), fact_words(p[0])))
    if not pieces:
        return {"reason": "The answer says nothing.", "covered": False}
    stating = next((p for p, s in pieces if not unstated(fact, p, s)), None)
    if stating is None:
        return {"reason": f"Not stated: {unstated(fact, *pieces[0])}.", "covered": False}
    share = coverage(fact_words(fact), fact_words(stating))
    return {"reason": f"Stated in '{quote(stating)}' ({share:.0%} of its words).", "covered": True}

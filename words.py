"""Word-level rules shared by the offline backends: sentences, content words, stems, identifiers."""
import re

STOPWORDS = frozenset("""
a an and are as at be been but by can could do does did for from has have how i if in into is it its
itself me my no not of on or our out over so that the their them then there these they this to too up
us was we were what when where which while who why will with would you your yours also any all am
each than just should may might must only other same some such very via about after before own yes
""".split())

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
# Keeps dotted and hyphenated names whole: tasks.db, 2.4.1, --dry-run, config.toml.
_WORD = re.compile(r"[a-z0-9$~_][a-z0-9$~_./-]*[a-z0-9_]|[a-z0-9]")


def sentences(text: str) -> list[str]:
    """Split prose into sentences at . ! ? followed by space, and at line breaks."""
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip()]


def words(text: str) -> list[str]:
    """Lower-cased words in order, with dotted names, versions and flags kept whole."""
    return _WORD.findall((text or "").lower())


def stem(word: str) -> str:
    """A crude suffix stripper: enough to match 'backs'/'back', 'archived'/'archive', 'locks'/'locked'."""
    if not word.isalpha() or len(word) <= 3:
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e") or word


def content(text: str) -> set[str]:
    """Stems of the words that carry meaning: stopwords dropped."""
    return {stem(w) for w in words(text) if w not in STOPWORDS}


def identifiers(text: str) -> set[str]:
    """Specific names a claim can get wrong: anything with a digit, a dot, a dash, an underscore or a slash."""
    return {w for w in words(text) if any(c.isdigit() or c in "._-/~$" for c in w)}


def coverage(part: set[str], whole: set[str]) -> float:
    """Share of `part` found in `whole`; an empty part is fully covered."""
    return len(part & whole) / len(part) if part else 1.0

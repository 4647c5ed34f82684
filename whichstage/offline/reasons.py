"""How the lexical judge's reasons cite what they judged: a sentence quoted, shortened, and the words not found."""


def quote(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def missing(part: set[str], whole: set[str]) -> str:
    return ", ".join(sorted(part - whole)) or "none"

"""What the `rules` model answers from its tools' outputs: an extractive answer of at most MAX_SENTENCES
sentences (record facts first, then the page sentences that best match the query, read as prose), its
refusal when the pages do not address the query, and its small-talk replies."""
import json
import re
from typing import Optional

from langchain_core.messages import ToolMessage

from whichstage.offline.words import content, planted_instruction, sentences, small_talk_classes, urls

# Words that ask rather than say what is wanted: not counted when deciding whether a page answers.
ASKING = content("tell explain show help please describe know want need wonder like anyone someone")
# A question naming one of these asks for an address, so a page sentence with a URL may answer it.
LINK_WORDS = content("link links url urls website site web address homepage download email e-mail")
MAX_SENTENCES = 3
_OPENERS = {"greeting": "Hello!", "thanks": "You're welcome!", "goodbye": "Goodbye!"}


def small_talk_reply(message: str, product: str) -> str:
    """A reply by small-talk class (greeting, thanks, goodbye), then an offer to help."""
    classes = small_talk_classes(message)
    about = product or "the product"
    closing = (f"Come back any time you have a question about {about}." if "goodbye" in classes
               else f"Ask me anything about using {about}.")
    return " ".join([_OPENERS[c] for c in classes] + [closing])


def refusal(product: str, rest: bool = False) -> str:
    """The agent's refusal; words.is_refusal recognises it."""
    docs = f"The {product} documentation" if product else "The documentation"
    return f"{docs} does not cover {'the rest of the question' if rest else 'that'}."


def record_sentence(output: str) -> str:
    """A lookup's JSON record as one sentence of its fields and values; anything else (an error text) as it is."""
    try:
        record = json.loads(output)
    except (json.JSONDecodeError, TypeError):
        return str(output).strip()
    if not isinstance(record, dict):
        return str(output).strip()
    fields = [f"{str(k).replace('_', ' ')} {v}" for k, v in record.items()
              if v is not None and not isinstance(v, (dict, list))]
    return (", ".join(fields) + ".") if fields else str(output).strip()


def page_texts(message: ToolMessage) -> list[str]:
    """The pages a retriever's message holds: its Document artifact, else a JSON list of objects' text, else
    its text split at blank lines. A first line that is a heading or a bare title is left out."""
    artifact = getattr(message, "artifact", None)
    if isinstance(artifact, list) and artifact and all(hasattr(d, "page_content") for d in artifact):
        texts = [d.page_content for d in artifact]
    else:
        try:
            found = json.loads(message.text)
        except (json.JSONDecodeError, TypeError):
            found = None
        if isinstance(found, list) and all(isinstance(p, dict) for p in found):
            texts = [str(next((p[f] for f in ("text", "page_content", "content") if f in p), "")) for p in found]
        else:
            texts = [t for t in re.split(r"\n\s*\n", message.text) if t.strip()]
    return [prose(body(t)) for t in texts]


def body(text: str) -> str:
    """A page's text without its title line: a markdown heading, or a first line with no sentence end."""
    first, _, rest = text.strip().partition("\n")
    if rest and (first.lstrip().startswith("#") or not re.search(r"[.!?:]\s*$", first)):
        return rest
    return text


# Markdown lines that only shape the page: headings, setext underlines, rules, code fences, table separators.
_LAYOUT_LINE = re.compile(r"^\s*(?:#{1,6}(?:\s.*)?|[=-]{3,}|(?:[-*_]\s*){3,}|```.*|~~~.*|\|?[\s:|-]*-[\s:|-]*\|?)$")
# What opens a markdown block line: quote marks, then a list item's bullet or number and task box.
_BLOCK_MARK = re.compile(r"^\s*(?:>\s?)*(?:(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?)?")


def prose(text: str) -> str:
    """A markdown page as plain lines: layout lines dropped, quote and list markers stripped, a table row's
    cells joined by commas; the words themselves are kept as written."""
    kept: list[str] = []
    for line in text.splitlines():
        if _LAYOUT_LINE.match(line):
            if re.match(r"^\s*(?:=+|-+)\s*$", line) and kept and kept[-1].strip():
                kept.pop()  # a setext underline: the line above it is a heading
            continue
        line = _BLOCK_MARK.sub("", line)
        if line.strip().startswith("|"):
            line = ", ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip())
        kept.append(line)
    return "\n".join(kept)


def usable(sentence: str, question: str) -> bool:
    """May a page sentence go into the answer? Never a planted instruction; a URL only when asked for one."""
    if planted_instruction(sentence):
        return False
    return not urls(sentence) or bool(content(question) & LINK_WORDS)


def addresses(chosen: list[str], wanted: set[str]) -> bool:
    """Do the chosen sentences together hold at least half of the wanted words, and two when two or more
    are wanted?"""
    held = set().union(*map(content, chosen)) & wanted if chosen else set()
    return len(held) >= max(min(2, len(wanted)), -(-len(wanted) // 2), 1)


def extractive_answer(question: str, outputs: list[ToolMessage], query: str, product: str = "",
                      roles: Optional[dict[str, str]] = None) -> str:
    """At most three sentences from the tool outputs: record facts first, then the usable page sentences
    sharing the most content words with the search query, best first, ties in page order; the refusal when
    the search found nothing that addresses the query (see the module docstring). `roles` maps a tool's
    name to its role."""
    roles = roles or {}
    chosen = [record_sentence(m.text) for m in outputs if roles.get(m.name or "") == "lookup"]
    searches = [m for m in outputs if roles.get(m.name or "") == "retriever"]
    if not searches:
        return " ".join(chosen[:MAX_SENTENCES]) or refusal(product)
    wanted = content(query or question) - content(product) - ASKING
    scored: list[tuple[int, int, str]] = []
    for m in searches:
        for text in page_texts(m):
            for sentence in sentences(text):
                if usable(sentence, question):
                    scored.append((-len(content(sentence) & wanted), len(scored), sentence))
    found = [s for score, _, s in sorted(scored) if score < 0][:MAX_SENTENCES]
    if not addresses(found, wanted):
        return " ".join(chosen + [refusal(product, rest=bool(chosen))])
    return " ".join(chosen + found[: max(1, MAX_SENTENCES - len(chosen))])


"""The `rules` model's policy for action tools (role = "action": a side effect such as filing a ticket).

An action is proposed only when the message asks for it in plain words: a sentence that is a request
addressed to the assistant (it opens with 'please', 'can/could/would/will you', 'I'd like you to', 'go ahead
and', or directly with the verb) whose verb is one the tool says it does (its name's first word, after a cue
any word of its name, or the first word of a clause of its description) and which names another word of its
name or description ('please open a ticket: ...' asks a tool described as 'file a bug report: open an
issue'). A question about the action ('how do I file a bug report?') or a statement that starts with one of
its nouns ('bug #240 says ...') asks for nothing. Synonyms (issue, bug, ticket) count as the same word. No
word of any one tool is built in.

Its arguments come from the request's detail: the text after the request's colon (else after 'about',
'regarding' or 'saying', else the whole message), each filled as arguments.py says.
"""
import re
from typing import Optional

from whichstage.offline.arguments import argument, name_words
from whichstage.offline.words import content, sentences, words

# Nouns a person uses for the same kind of record (also the lookups' record nouns, whichstage/offline/references.py).
SYNONYMS = (frozenset({"issue", "bug", "ticket"}),)
_CUE = re.compile(r"^\s*(?:(?:please|kindly|now|ok|okay|so)[\s,]+)*(?:(?:can|could|would|will)\s+you\s+"
                  r"(?:please\s+)?|i(?:'d|\s+would)\s+like\s+you\s+to\s+|go\s+ahead\s+and\s+)?(?:please\s+)?",
                  re.IGNORECASE)
_QUESTION_OPENERS = frozenset("how what where when why which who whom whose is are does do did should can "
                              "could may might".split())
_DETAIL_AFTER = re.compile(r"\b(?:about|regarding|saying)\b\s*", re.IGNORECASE)


def with_synonyms(found: list[str]) -> str:
    """The words, and the synonyms of any of them, as one text for `content`."""
    extra = [w for group in SYNONYMS if group & set(found) for w in group]
    return " ".join(found + extra)


def tool_words(name: str, description: str) -> set[str]:
    """The content stems of what a tool says it does: its name's words and its description's."""
    return content(with_synonyms(name_words(name) + words(description)))


def request_head(sentence: str) -> Optional[tuple[bool, str]]:
    """The request of a sentence addressed to the assistant, without its opening cue and its detail, and whether
    it opened with a cue ('please', 'can you'); None when the sentence is a question or a statement about
    something rather than a request."""
    head = sentence.split(":", 1)[0]
    cue = _CUE.match(head)
    assert cue is not None  # the cue pattern is optional throughout: it matches at the start of any text
    rest = head[cue.end():]
    first = words(rest)[:1]
    if not first or first[0] in _QUESTION_OPENERS or first[0] in ("i", "we", "my", "our"):
        return None
    return bool(cue.group(0).strip()), rest


def action_verbs(name: str, description: str, cued: bool) -> set[str]:
    """The verbs a tool says it does: its name's first word and the first word of each clause of its
    description (tools are named and described verb first: file_bug_report, 'File a bug report: open ...'),
    and after a cue ('please refund order 7' for send_refund) any word of its name."""
    named = name_words(name)
    clauses = [named if cued else named[:1]] + [words(c)[:1] for c in re.split(r"[.:;,]|\band\b", description)]
    return content(" ".join(w for first in clauses for w in first))


def asks_for(sentence: str, name: str, description: str) -> bool:
    """Does the sentence request this action: its first word one of the tool's verbs, and another word of the
    tool's name or description named?"""
    found = request_head(sentence)
    if found is None:
        return False
    cued, head = found
    said = words(head)
    verb = content(said[0])
    return bool(verb) and verb <= action_verbs(name, description, cued) and \
        len(content(with_synonyms(said)) & tool_words(name, description)) >= 2


def detail(message: str, sentence: str) -> str:
    """What the request is about: the text after its colon (to the end of the message), else after 'about' and
    the like, else the whole message."""
    at = message.find(sentence)
    if ":" in sentence:
        return message[at + sentence.index(":") + 1:].strip()
    after = _DETAIL_AFTER.search(sentence)
    return sentence[after.end():].strip(" .!?") if after else message.strip()


def requested_actions(message: str, tools: dict[str, dict]) -> list[dict]:
    """The action calls the message asks for, each once, in the tools' order; `tools` maps a bound tool with a
    role to {"role", "description", "arguments": {name: JSON type}, "schemas": {name: JSON schema}} (a
    lookup also "key" and "keys")."""
    calls = []
    for name, tool in tools.items():
        if tool["role"] != "action":
            continue
        asking = next((s for s in sentences(message) if asks_for(s, name, tool.get("description", ""))), None)
        if asking is None:
            continue
        about = detail(message, asking)
        schemas = tool.get("schemas", {})
        args = {arg: argument(arg, kind, schemas.get(arg, {}), about, message, tools)
                for arg, kind in tool["arguments"].items()}
        calls.append({"name": name, "args": {k: v for k, v in args.items() if v is not None}})
    return calls

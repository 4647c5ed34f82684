"""Deterministic offline stand-ins for the agent's models: the `rules` chat model and the `hash` embedder.

They implement LangChain's real interfaces, so `create_agent`'s loop, tool binding and the vector store run
exactly as they do with Gemini or Ollama; only the decisions are plain rules instead of a network call.

The rules model chooses among the agent's tools by the role the harness tells it (`roles`, from evals.toml:
retriever, lookup or action) and by each tool's argument types, never by a tool's name (an action only by
what its name and description say it does); a tool with no role (an ordinary tool: a calculator, say) is never
called by it. Its policy (every rule is about questions in
general; the word rules live in words.py):
- A lookup is called for each key of its records that the message mentions (a whole-word match, any case),
  and, when its key argument is an integer, for each number introduced as a reference to its record: after
  one of the record's nouns ('ride 240', 'ride #240', 'ride no. 240', 'ride number 240', 'ride id 240', lists
  after a plural: 'rides 212 and 218', 'bugs #1, #2 or #3'), or a bare '#240' that follows no other lookup's
  noun. The nouns are the words of the tool's key argument and name that are not verbs or numbering words
  (get_ride(ride_id) -> ride; get_issue(number) -> issue), with their synonyms (SYNONYMS: issue, bug,
  ticket). A number that is not introduced that way ('30 seconds', '2.4.1', '90 days', or after the noun used
  as a verb: 'can I ride 20 km') and is not a key of the records is not a reference.
- Small talk (every sentence a greeting, thanks or goodbye, or content-free like 'ok'; nothing asked) gets
  no tool call and a reply chosen by its classes, not by any one message's wording: 'Hello!', 'You're
  welcome!', 'Goodbye!' in that order, then an offer to answer questions about the product.
- Anything else calls the first retriever (with its first string argument) before it answers: a message
  with no reference searches with the message (minus its small-talk sentences); a message with one searches
  only its asking clauses that are not about the record (a clause made only of words like fixed / version /
  status is about the record).
- The answer is extractive, at most three sentences: record facts first, then the page sentences sharing the
  most content words with the query, best first, ties in page order. Pages are read as prose: a markdown
  page's headings, rules, code fences and table separators are left out, and its quote and list markers
  stripped, so no markdown block syntax reaches an answer. Never used: a sentence that is a
  planted instruction (words.planted_instruction: addressed to an AI assistant, telling the reader to send
  a secret to an address, or telling the model to ignore its instructions), and a sentence carrying a URL or
  e-mail address unless the question asks for a link or address (LINK_WORDS). So an instruction found in a
  page is never obeyed nor repeated, and no address from a page reaches the user unasked.
- A message that asks in plain words for an action (a tool with role `action`, matched by the tool's own
  name and description) gets that action's call and nothing else, then relays what the action returned (in
  evaluation: that it awaits the user's confirmation) as its reply (whichstage/offline/actions.py).
- It abstains when what it retrieved does not address the query: the chosen sentences together must hold
  at least half of the query's content words, and at least two of them when it has two or more (the
  product's own name, which every page carries, and asking words like 'tell' or 'explain' are not counted).
  Otherwise the docs part of the answer is the refusal "The <product> documentation does not cover that."
  (worded to match words.is_refusal, which the judge uses), with no guess.
The product's name is read from the system prompt (the first name in backticks), so no name is built in.
"""
import hashlib
import json
import math
import re
from typing import Any, Optional

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from whichstage.live_calls import injected_latency
from whichstage.offline.actions import SYNONYMS, name_words, requested_actions
from whichstage.offline.words import (QUESTION_WORDS, asks, content, is_small_talk, planted_instruction, sentences,
                   small_talk_classes, urls, words)

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
# Words that ask rather than say what is wanted: not counted when deciding whether a page answers.
ASKING = content("tell explain show help please describe know want need wonder like anyone someone")
# A question naming one of these asks for an address, so a page sentence with a URL may answer it.
LINK_WORDS = content("link links url urls website site web address homepage download email e-mail")
MAX_SENTENCES = 3
_CLAUSE_SPLIT = re.compile(r",?\s+and\s+(?=(?:%s)\b)" % "|".join(sorted(QUESTION_WORDS)), re.IGNORECASE)
_OPENERS = {"greeting": "Hello!", "thanks": "You're welcome!", "goodbye": "Goodbye!"}


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


def noun_references(text: str, nouns: list[str]) -> list[tuple[int, int, list[int]]]:
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


def referenced_numbers(text: str, nouns: list[str], others: list[str] = ()) -> list[int]:
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


def mentioned_keys(text: str, keys: list[str], integer: bool, nouns: list[str] = (),
                   others: list[str] = ()) -> list[Any]:
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


def tool_arguments(tool: dict) -> dict[str, Optional[str]]:
    """A bound tool's arguments and their JSON types (lower-cased: Gemini's declarations say STRING), from
    its OpenAI-format schema."""
    properties = tool["function"].get("parameters", {}).get("properties", {})
    found = {}
    for name, schema in properties.items():
        kind = schema.get("type") or next((o.get("type") for o in schema.get("anyOf", [])
                                           if str(o.get("type")).lower() not in ("none", "null")), None)
        found[name] = kind.lower() if isinstance(kind, str) else None
    return found


def plan_tool_calls(question: str, tools: dict[str, dict]) -> list[dict]:
    """The rules policy (see the module docstring). `tools` maps each bound tool with a role to
    {"role", "arguments": {name: JSON type}, and for a lookup "key" and "keys"}."""
    actions = requested_actions(question, tools)
    if actions:
        return actions  # asked to act: the proposal is the whole reply (whichstage/offline/actions.py)
    lookups = {n: t for n, t in tools.items() if t["role"] == "lookup"}
    retriever = next((n for n, t in tools.items() if t["role"] == "retriever"
                      and any(kind == "string" for kind in t["arguments"].values())), None)
    nouns = {name: record_nouns(name, tool["key"]) for name, tool in lookups.items()}

    def keys_in(text: str, name: str) -> list[Any]:
        tool, others = lookups[name], [n for other, found in nouns.items() if other != name for n in found]
        return mentioned_keys(text, tool.get("keys", []), tool["arguments"].get(tool["key"]) == "integer",
                              nouns[name], others)

    calls = [{"name": name, "args": {tool["key"]: key}} for name, tool in lookups.items()
             for key in keys_in(question, name)]
    referenced = bool(calls)

    def mentions(clause: str) -> bool:
        return any(keys_in(clause, name) for name in lookups)

    def search(query: str) -> list[dict]:
        if retriever is None:
            return []
        argument = next(a for a, kind in tools[retriever]["arguments"].items() if kind == "string")
        return [{"name": retriever, "args": {argument: query}}]

    if referenced:
        topic = RECORD_TOPIC | content(" ".join(n for found in nouns.values() for n in found))
        clauses = [c for s in sentences(question) for c in _CLAUSE_SPLIT.split(s) if c.strip()]
        docs_clauses = [c.strip() for c in clauses
                        if asks(c) and not mentions(c) and not content(c) <= topic]
        return calls + (search(" ".join(docs_clauses)) if docs_clauses else [])
    if is_small_talk(question):
        return []
    said = sentences(question)
    # The whole message is the query (a statement before the question gives it context), minus small talk.
    kept = [s for s in said if not (small_talk_classes(s) and not asks(s))]
    query = question.strip() if len(kept) == len(said) or not kept else " ".join(kept)
    return search(query)


def product_name(messages: list[BaseMessage]) -> str:
    """The product the system prompt is about: its first name in backticks, or '' when it names none."""
    for m in messages:
        if isinstance(m, SystemMessage):
            found = re.findall(r"`([^`\n]+)`", m.text)
            if found:
                return found[0].strip()
    return ""


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
    kept = []
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
    chosen = [record_sentence(m.text) for m in outputs if roles.get(m.name) == "lookup"]
    searches = [m for m in outputs if roles.get(m.name) == "retriever"]
    if not searches:
        return " ".join(chosen[:MAX_SENTENCES]) or refusal(product)
    wanted = content(query or question) - content(product) - ASKING
    scored = []
    for m in searches:
        for text in page_texts(m):
            for sentence in sentences(text):
                if usable(sentence, question):
                    scored.append((-len(content(sentence) & wanted), len(scored), sentence))
    found = [s for score, _, s in sorted(scored) if score < 0][:MAX_SENTENCES]
    if not addresses(found, wanted):
        return " ".join(chosen + [refusal(product, rest=bool(chosen))])
    return " ".join(chosen + found[: max(1, MAX_SENTENCES - len(chosen))])


def _usage(messages: list[BaseMessage], reply: str) -> dict:
    """Token counts as the number of words in and out, so cost columns have something real to add up."""
    seen = sum(len(words(m.text if isinstance(m.content, list) else str(m.content))) for m in messages)
    produced = len(words(reply))
    return {"input_tokens": seen, "output_tokens": produced, "total_tokens": seen + produced}


class RulesChatModel(BaseChatModel):
    """`rules`: a tool-calling chat model whose every decision is a documented rule (see plan_tool_calls).
    `roles` maps a tool's name to {"role": "retriever" | "lookup", and for a lookup "key" and "keys"}."""

    roles: dict = {}

    @property
    def _llm_type(self) -> str:
        return "rules"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        injected_latency()
        bound = {t["function"]["name"]: t for t in kwargs.get("tools", [])}
        tools = {name: {**self.roles[name], "arguments": tool_arguments(tool),
                        "description": tool["function"].get("description", "")}
                 for name, tool in bound.items() if name in self.roles}
        last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        question = messages[last_human].text
        outputs = [m for m in messages[last_human:] if isinstance(m, ToolMessage)]
        if not outputs:
            planned = plan_tool_calls(question, tools)
            if planned:
                calls = [{"name": c["name"], "args": c["args"], "id": f"call_{i}", "type": "tool_call"}
                         for i, c in enumerate(planned)]
                message = AIMessage(content="", tool_calls=calls,
                                    usage_metadata=_usage(messages, json.dumps(planned)))
                return ChatResult(generations=[ChatGeneration(message=message)])
            answer = small_talk_reply(question, product_name(messages))
        elif any(tools.get(m.name, {}).get("role") == "action" for m in outputs):
            answer = " ".join(m.text for m in outputs if tools.get(m.name, {}).get("role") == "action")
        else:
            queries = [str(v) for m in messages[last_human:] if isinstance(m, AIMessage) for c in m.tool_calls
                       if tools.get(c["name"], {}).get("role") == "retriever" for v in c["args"].values()
                       if isinstance(v, str)]
            answer = extractive_answer(question, outputs, " ".join(queries), product_name(messages),
                                       {name: t["role"] for name, t in tools.items()})
        message = AIMessage(content=answer, usage_metadata=_usage(messages, answer))
        return ChatResult(generations=[ChatGeneration(message=message)])


class HashEmbeddings(Embeddings):
    """`hash`: each content word is hashed into one of DIM signed buckets, then the vector is normalised.
    Pages that share words with the query score high; synonyms do not help, as with any bag of words."""

    DIM = 512

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.DIM
        for token in sorted(content(text)):
            digest = hashlib.sha256(token.encode()).digest()
            index = int.from_bytes(digest[:4], "big") % self.DIM
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if not norm:  # nothing to hash: a fixed unit vector keeps cosine similarity defined
            return [1.0] + [0.0] * (self.DIM - 1)
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        injected_latency()
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        injected_latency()
        return self._embed(text)

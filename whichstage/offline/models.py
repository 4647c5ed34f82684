"""`rules`: a deterministic offline stand-in for the agent's chat model (the `hash` embedder is hash_embedder.py).

It implements LangChain's real interface, so `create_agent`'s loop and tool binding run exactly as they do
with Gemini or Ollama; only the decisions are plain rules instead of a network call.

The rules model chooses among the agent's tools by the role the harness tells it (`roles`, from evals.toml:
retriever, lookup or action) and by each tool's argument types, never by a tool's name (an action only by
what its name and description say it does); a tool with no role (an ordinary tool: a calculator, say) is never
called by it. Its policy (every rule is about questions in general; the word rules live in words.py, which
records a message refers to in references.py, how it answers in answers.py):
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
  evaluation: that it awaits the user's confirmation) as its reply (whichstage/offline/actions.py; its
  arguments, an identifier told apart by the tool's schema and lookups, by arguments.py).
- It abstains when what it retrieved does not address the query: the chosen sentences together must hold
  at least half of the query's content words, and at least two of them when it has two or more (the
  product's own name, which every page carries, and asking words like 'tell' or 'explain' are not counted).
  Otherwise the docs part of the answer is the refusal "The <product> documentation does not cover that."
  (worded to match words.is_refusal, which the judge uses), with no guess.
The product's name is read from the system prompt (the first name in backticks), so no name is built in.
"""
import json
import re
from typing import Any, Optional

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from whichstage.calls.retries import injected_latency
from whichstage.offline.actions import requested_actions
from whichstage.offline.answers import extractive_answer, small_talk_reply
from whichstage.offline.references import RECORD_TOPIC, mentioned_keys, record_nouns
from whichstage.offline.words import QUESTION_WORDS, asks, content, is_small_talk, sentences, small_talk_classes, words

_CLAUSE_SPLIT = re.compile(r",?\s+and\s+(?=(?:%s)\b)" % "|".join(sorted(QUESTION_WORDS)), re.IGNORECASE)


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
    {"role", "arguments": {name: JSON type}, "schemas": {name: JSON schema}, and for a lookup "key" and
    "keys"}."""
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
                        "schemas": tool["function"].get("parameters", {}).get("properties", {}),
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


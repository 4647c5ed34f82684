"""Deterministic offline stand-ins for the agent's models: the `rules` chat model and the `hash` embedder.

They implement LangChain's real interfaces, so `create_agent`'s loop, tool binding and the vector store run
exactly as they do with Gemini or Ollama; only the decisions are plain rules instead of a network call.
"""
import hashlib
import json
import math
import re
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from live_calls import injected_latency
from words import content, sentences, words

ISSUE_NUMBER = re.compile(r"\bissue\s*#?\s*(\d+)", re.IGNORECASE)
QUESTION_WORDS = frozenset("how where what which why when can is are does do should could".split())
# A clause made only of these words asks about the numbered issue itself, which get_issue answers.
ISSUE_TOPIC = content("fix fixed fixes version released release status state open closed resolved")
# Every page names the product, so it says nothing about which sentence answers the question.
PRODUCT = content("tracker")
MAX_SENTENCES = 3
SMALL_TALK_REPLY = "Thank you, glad tracker works well for your team!"
_CLAUSE_SPLIT = re.compile(r",?\s+and\s+(?=(?:%s)\b)" % "|".join(QUESTION_WORDS), re.IGNORECASE)


def plan_tool_calls(question: str) -> list[dict]:
    """The rules policy: get_issue for a numbered issue, search_docs for how/where/what, nothing for small talk."""
    numbers = ISSUE_NUMBER.findall(question)
    clauses = [c for s in sentences(question) for c in _CLAUSE_SPLIT.split(s) if c.strip()]
    docs_clauses = []
    for clause in clauses:
        about_issue = ISSUE_NUMBER.search(clause) or (numbers and content(clause) <= ISSUE_TOPIC)
        first = words(clause)[:1]
        asks = clause.rstrip().endswith("?") or (first and first[0] in QUESTION_WORDS)
        if asks and not about_issue:
            docs_clauses.append(clause.strip())
    calls = [{"name": "get_issue", "args": {"number": int(n)}} for n in dict.fromkeys(numbers)]
    if docs_clauses:
        # Without an issue the whole message is the query: a statement before the question gives it context.
        query = " ".join(docs_clauses) if numbers else question.strip()
        calls.append({"name": "search_docs", "args": {"query": query}})
    return calls


def issue_sentence(output: str) -> str:
    """Render get_issue's JSON as one sentence; pass anything else (an error text) through."""
    try:
        issue = json.loads(output)
    except json.JSONDecodeError:
        return output.strip()
    if issue.get("state") == "closed":
        fixed = f" and fixed in {issue['fixed_in']}" if issue.get("fixed_in") else ""
        return f"Issue {issue['number']}, {issue['title']}, is closed{fixed}."
    return f"Issue {issue['number']}, {issue['title']}, is still {issue.get('state', 'open')}."


def extractive_answer(question: str, outputs: list[ToolMessage], query: str) -> str:
    """At most three sentences from the tool outputs: issue facts first, then the page sentences sharing
    the most content words with the search query (at least one), best first, ties in page order."""
    chosen = [issue_sentence(m.content) for m in outputs if m.name == "get_issue"]
    wanted = content(query or question) - PRODUCT
    scored = []
    for m in outputs:
        if m.name != "search_docs":
            continue
        for page in json.loads(m.content):
            body = page["text"].split("\n", 1)[-1]  # the first line is the page title
            for sentence in sentences(body):
                scored.append((-len(content(sentence) & wanted), len(scored), sentence))
    chosen += [s for score, _, s in sorted(scored) if score < 0][: max(0, MAX_SENTENCES - len(chosen))]
    return " ".join(chosen[:MAX_SENTENCES]) or "The documentation does not answer that."


def _usage(messages: list[BaseMessage], reply: str) -> dict:
    """Token counts as the number of words in and out, so cost columns have something real to add up."""
    seen = sum(len(words(m.text if isinstance(m.content, list) else str(m.content))) for m in messages)
    produced = len(words(reply))
    return {"input_tokens": seen, "output_tokens": produced, "total_tokens": seen + produced}


class RulesChatModel(BaseChatModel):
    """`rules`: a tool-calling chat model whose every decision is a documented rule (see plan_tool_calls)."""

    @property
    def _llm_type(self) -> str:
        return "rules"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        injected_latency()
        available = {t["function"]["name"] for t in kwargs.get("tools", [])}
        last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        question = messages[last_human].text
        outputs = [m for m in messages[last_human:] if isinstance(m, ToolMessage)]
        if not outputs:
            planned = [c for c in plan_tool_calls(question) if c["name"] in available]
            if planned:
                calls = [{"name": c["name"], "args": c["args"], "id": f"call_{i}", "type": "tool_call"}
                         for i, c in enumerate(planned)]
                message = AIMessage(content="", tool_calls=calls,
                                    usage_metadata=_usage(messages, json.dumps(planned)))
                return ChatResult(generations=[ChatGeneration(message=message)])
            answer = SMALL_TALK_REPLY
        else:
            queries = [c["args"].get("query", "") for m in messages[last_human:] if isinstance(m, AIMessage)
                       for c in m.tool_calls if c["name"] == "search_docs"]
            answer = extractive_answer(question, outputs, " ".join(queries))
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

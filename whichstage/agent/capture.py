"""Run any agent once and keep what it did: each tool call with its arguments, each tool's output as the
agent saw it, the Documents a tool returned as its artifact or its retrievers returned through the
callbacks, the answer and the token counts, and the actions proposed (never run: whichstage/agent/actions.py).
Reading those as pages is whichstage/agent/reading.py's job, at scoring time."""
import json
import threading
from typing import Any, Mapping, Optional, Sequence

from whichstage.agent.actions import MARKER


class AgentOutputError(Exception):
    """The agent's result is not the {"messages": [...]} state the contract asks for."""


def page_of(document) -> dict:
    """A Document as recorded: its id (Document.id, else metadata id, else source), its text and its metadata
    as JSON (what a retriever's `page` rule reads)."""
    meta = getattr(document, "metadata", None) or {}
    found = getattr(document, "id", None) or meta.get("id") or meta.get("source")
    page = {"id": None if found is None else str(found), "text": str(getattr(document, "page_content", ""))}
    return {**page, "metadata": json.loads(json.dumps(meta, default=str))} if meta else page


def recorder():
    """A callback handler that keeps, per tool call id, the Documents every retriever under it returned."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Recorder(BaseCallbackHandler):
        def __init__(self):
            self.lock, self.parents, self.tool_calls, self.found = threading.Lock(), {}, {}, []

        def _start(self, run_id, parent_run_id):
            with self.lock:
                self.parents[run_id] = parent_run_id

        def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs):
            self._start(run_id, parent_run_id)

        def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kwargs):
            self._start(run_id, parent_run_id)

        def on_tool_start(self, serialized, input_str, *, run_id, parent_run_id=None, **kwargs):
            self._start(run_id, parent_run_id)
            with self.lock:
                self.tool_calls[run_id] = kwargs.get("tool_call_id")

        def on_retriever_end(self, documents, *, run_id, parent_run_id=None, **kwargs):
            with self.lock:
                self.found.append((parent_run_id, [page_of(d) for d in documents]))

        def pages_by_call(self) -> dict[str, list[dict]]:
            """The pages each tool call's retrievers returned, in the order they returned them."""
            by_call: dict[str, list[dict]] = {}
            with self.lock:
                for parent, pages in self.found:
                    run, seen = parent, set()
                    while run is not None and run not in self.tool_calls and run not in seen:
                        seen.add(run)
                        run = self.parents.get(run)
                    call = self.tool_calls.get(run)
                    if call is not None:
                        by_call.setdefault(call, []).extend(pages)
            return by_call

    return Recorder()


def messages_of(history: list[dict]) -> list:
    """A case's earlier turns as LangChain messages: a user turn, an assistant turn (its tool calls first,
    each answered by its recorded output, then its reply)."""
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

    messages: list[BaseMessage] = []
    for t, turn in enumerate(history):
        if turn["role"] == "user":
            messages.append(HumanMessage(content=turn["content"]))
            continue
        calls = [{"name": c["name"], "args": c.get("args", {}), "id": f"history_{t}_{i}", "type": "tool_call"}
                 for i, c in enumerate(turn.get("tool_calls", []))]
        if calls:
            messages.append(AIMessage(content="", tool_calls=calls))
            messages += [ToolMessage(content=c.get("output", ""), tool_call_id=call["id"], name=c["name"])
                         for c, call in zip(turn["tool_calls"], calls, strict=False)]
        messages.append(AIMessage(content=turn["content"]))
    return messages


def made_for(agent, calls: Sequence[Mapping[str, Any]], handler) -> list:
    """The tool calls `calls` made for the agent through its own tools (an action's stand-in for an action,
    so it never runs), as the messages an agent that had made them would hold: its call, then each output."""
    from langchain_core.messages import AIMessage
    from whichstage.agent.factory import tools_of

    tools = {t.name: t for t in tools_of(agent)}
    made = [{"name": c["name"], "args": c["args"], "id": f"made_{i}", "type": "tool_call"} for i, c in enumerate(calls)]
    outputs = [tools[c["name"]].invoke(c, config={"callbacks": [handler]}) for c in made]
    return [AIMessage(content="", tool_calls=made), *outputs]


def run(agent, question: str, history: Optional[list[dict]] = None,
        made: Optional[Sequence[Mapping[str, Any]]] = None) -> dict:
    """Run one question through any agent of the contract and keep its whole trajectory; `history` is the
    case's earlier turns (a follow-up), which the agent receives before the question; `made`, tool calls made
    for it before it goes on (the tools intervention), which the trace holds as its own. The trace is of the
    last turn alone."""
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    handler = recorder()
    injected = made_for(agent, made, handler) if made else []
    asked = [*messages_of(history or []), HumanMessage(content=question), *injected]
    result = agent.invoke({"messages": asked}, config={"callbacks": [handler]})
    messages = result.get("messages") if isinstance(result, dict) else None
    if not isinstance(messages, list):
        raise AgentOutputError(f"the agent returned {type(result).__name__}, not a state with 'messages'")
    start = len(asked) - len(injected)
    new = messages[start:] if len(messages) > start else messages
    replies = [m for m in new if isinstance(m, AIMessage)]
    if not replies:
        raise AgentOutputError("the agent's messages hold no AI message: it gave no answer")
    calls = [{"name": c["name"], "args": c["args"]} for m in replies for c in m.tool_calls]
    by_call, names = handler.pages_by_call(), {c.get("id"): c["name"] for m in replies for c in m.tool_calls}
    outputs, proposals = [], []
    args_of = {c.get("id"): c["args"] for m in replies for c in m.tool_calls}
    for m in new:
        if not isinstance(m, ToolMessage):
            continue
        output: dict[str, Any] = {"tool": m.name or names.get(m.tool_call_id), "content": m.text}
        artifact = getattr(m, "artifact", None)
        if isinstance(artifact, list) and artifact and all(isinstance(d, Document) for d in artifact):
            output["artifact"] = [page_of(d) for d in artifact]
        if m.tool_call_id in by_call:
            output["callbacks"] = by_call[m.tool_call_id]
        if isinstance(artifact, dict) and MARKER in artifact:  # an action's stand-in answered: not run
            proposals.append({"tool": output["tool"], "args": args_of.get(m.tool_call_id, {})})
        outputs.append(output)
    usage = {"input_tokens": 0, "output_tokens": 0}
    for m in replies:
        if m.usage_metadata:  # None when the provider reports no counts
            usage["input_tokens"] += m.usage_metadata.get("input_tokens", 0)
            usage["output_tokens"] += m.usage_metadata.get("output_tokens", 0)
    return {"answer": replies[-1].text, "tool_calls": calls, "tool_outputs": outputs, "usage": usage,
            **({"proposed": proposals} if proposals else {})}

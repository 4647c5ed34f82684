"""A plain JSONL of chat messages: one conversation a line, `{"id"?, "messages": [...], "metadata"?}`, its
messages in the OpenAI or LangChain shape (an assistant message's `tool_calls`, each answered by a `tool`
message with its `tool_call_id`, and optionally the pages it returned as its `artifact`). Its last turn (from
the last user message on) is the trace; `id` names its case."""
from typing import Any

from whichstage.traces import messages as msgs
from whichstage.traces.spans import case_of, checked_id, fault


def is_conversation(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("messages"), list) and "run_type" not in value


def conversation(label: str, where: str, value: Any, line: int) -> list[dict]:
    """One line's conversation as spans.py's spans: a root, a model call per assistant message, a tool call per
    tool message of its last turn."""
    if not is_conversation(value):
        raise fault(label, where, None, "not a conversation (no messages list)")
    given = value.get("id")
    trace = checked_id(str(given) if isinstance(given, (str, int)) and not isinstance(given, bool) else None,
                       "id", label, where, required=False) or f"line-{line}"
    found = [m for m in map(msgs.message, value["messages"]) if m]
    last = max((i for i, m in enumerate(found) if m["role"] == "user"), default=None)
    if last is None:
        raise fault(label, where, trace, "no user message: nothing was asked")
    root = {"trace": trace, "id": trace, "parent": None, "start": 0.0, "end": None, "where": where,
            "name": "conversation", "kind": "agent", "question": found[last]["content"],
            "case": str(given) if given is not None else case_of(value.get("metadata"))}
    spans, names = [root], {}
    for i, m in enumerate(found[last + 1:], start=last + 1):
        ident = {"trace": trace, "id": f"{trace}.{i}", "parent": trace, "start": float(i), "end": None,
                 "where": f"{where} messages[{i}]", "name": m["role"], "case": None}
        if m["role"] == "assistant":
            names.update({c.get("id"): c["name"] for c in m["tool_calls"]})
            spans.append({**ident, "kind": "llm", "input": found[:i], "output": [m], "usage": {}})
        elif m["role"] == "tool":
            name = m.get("name") or names.get(m.get("tool_call_id"))
            if not name:
                raise fault(label, f"{where} messages[{i}]", trace, "a tool message names no tool and answers no "
                                                                     "tool call of the conversation")
            spans.append({**ident, "kind": "tool", "tool": name, "content": m["content"],
                          "artifact": m.get("artifact"), "call_id": m.get("tool_call_id"), "args": None})
    return spans

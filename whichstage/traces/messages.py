"""Chat messages, tool results and documents as the trace formats write them, made one shape: a message is
{"role": user|assistant|system|tool, "content", "tool_calls": [{"name", "args", "id"}], "tool_call_id",
"name", "artifact"}; a document is a page as the harness records one ({"id", "text", "metadata"}, as
whichstage/agent/capture.py's page_of). Read: the OpenAI shape (role, content, tool_calls with function
name and JSON arguments), LangChain's (type ai/human/tool/system, or its serialised `lc` constructor and
message_to_dict forms) and the GenAI conventions' parts (text, tool_call, tool_call_response). Pure."""
import json
from typing import Any, Optional

ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "system": "system",
         "developer": "system", "tool": "tool", "function": "tool"}
CLASSES = {"HumanMessage": "user", "HumanMessageChunk": "user", "AIMessage": "assistant",
           "AIMessageChunk": "assistant", "SystemMessage": "system", "ToolMessage": "tool",
           "ToolMessageChunk": "tool", "FunctionMessage": "tool"}


def parsed(value: Any) -> Any:
    """A JSON text as its value; anything else (or a text that is not JSON) as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def text_of(content: Any) -> str:
    """A message's content as text: a string, or the text of its blocks (LangChain's .text)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b if isinstance(b, str) else str(b.get("text") or b.get("content") or "") for b in content
                       if isinstance(b, str) or isinstance(b, dict) and b.get("type", "text") == "text")
    return json.dumps(content, ensure_ascii=False)


def unwrapped(value: Any) -> Any:
    """LangChain's serialised forms opened: {"lc": 1, "id": [..., Class], "kwargs": {...}} as its kwargs with
    `_class`, {"type": "ai", "data": {...}} as its data with its type."""
    if isinstance(value, dict) and value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        ids = value.get("id") or []
        return {**value["kwargs"], "_class": ids[-1] if ids and isinstance(ids[-1], str) else ""}
    if isinstance(value, dict) and isinstance(value.get("data"), dict) and isinstance(value.get("type"), str) \
            and "content" in value["data"]:
        return {"type": value["type"], **value["data"]}
    return value


def arguments(value: Any) -> dict:
    """A tool call's arguments as an object: a JSON text parsed; anything that is not an object as {"input"}."""
    value = parsed(value)
    if isinstance(value, dict):
        return value
    return {} if value in (None, "") else {"input": value}


def tool_call(call: Any) -> Optional[dict]:
    """A tool call of any of the shapes: LangChain's {name, args, id}, OpenAI's {id, function: {name,
    arguments}}, a GenAI tool_call part {id, name, arguments}."""
    if not isinstance(call, dict):
        return None
    function: dict = call["function"] if isinstance(call.get("function"), dict) else call
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    args = function.get("args", function.get("arguments"))
    found = {"name": name, "args": arguments(args)}
    if isinstance(call.get("id"), str):
        found["id"] = call["id"]
    return found


def message(value: Any) -> Optional[dict]:
    """One message in the one shape (module docstring); None for what is not a message."""
    value = unwrapped(parsed(value))
    if not isinstance(value, dict):
        return None
    role = ROLES.get(str(value.get("role") or value.get("type") or "")) or CLASSES.get(value.get("_class", ""))
    if role is None:
        return None
    found: dict = {"role": role, "content": "", "tool_calls": []}
    if isinstance(value.get("parts"), list):  # the GenAI conventions' message parts
        for part in value["parts"]:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                found["content"] += text_of(part.get("content"))
            elif part.get("type") == "tool_call" and tool_call(part):
                found["tool_calls"].append(tool_call(part))
            elif part.get("type") == "tool_call_response":
                found["content"] += text_of(part.get("response"))
                found["tool_call_id"] = part.get("id")
    else:
        found["content"] = text_of(value.get("content"))
        found["tool_calls"] = [c for c in map(tool_call, value.get("tool_calls") or []) if c]
    for field in ("tool_call_id", "name"):
        if isinstance(value.get(field), str):
            found[field] = value[field]
    if role == "tool" and isinstance(value.get("artifact"), list):
        found["artifact"] = value["artifact"]
    return found


def messages(value: Any) -> list[dict]:
    """The messages of a list (a batch of lists, as a chat model's inputs, is flattened) or of
    {"messages": [...]}; what is not a message is left out."""
    value = parsed(value)
    if isinstance(value, dict):
        value = value.get("messages") if "messages" in value else value.get("inputs", {}).get("messages") \
            if isinstance(value.get("inputs"), dict) else None
    if not isinstance(value, list):
        return []
    flat = [m for item in value for m in (item if isinstance(item, list) else [item])]
    return [m for m in map(message, flat) if m]


def tool_result(value: Any) -> tuple[str, Optional[list]]:
    """What a tool returned, as (its text, its artifact when it is a list): a ToolMessage in any of its
    serialised forms, {"output": ...} around one (OpenLLMetry, LangSmith), or plain text."""
    opened = parsed(value)
    if isinstance(opened, dict) and set(opened) <= {"output", "kwargs"} and "output" in opened:
        return tool_result(opened["output"])
    found = message(opened)
    if found is not None and found["role"] == "tool":
        return found["content"], found.get("artifact")
    if isinstance(value, str):
        return value, None
    return ("" if value is None else json.dumps(value, ensure_ascii=False)), None


def document(value: Any) -> Optional[dict]:
    """A retrieved document as a page: its id (its own, else its metadata's id, else source), text and
    metadata (an object; a JSON text parsed)."""
    value = unwrapped(parsed(value))
    if not isinstance(value, dict):
        return None
    meta = parsed(value.get("metadata"))
    meta = meta if isinstance(meta, dict) else {}
    found = value.get("id") or meta.get("id") or meta.get("source")
    text = value.get("page_content", value.get("content", value.get("text")))
    page = {"id": None if found is None else str(found), "text": text_of(text)}
    return {**page, "metadata": meta} if meta else page


def documents(value: Any) -> Optional[list[dict]]:
    """The documents of a list or of {"documents": [...]}, as pages; None when there is no such list."""
    value = parsed(value)
    if isinstance(value, dict):
        value = value.get("documents")
    if not isinstance(value, list):
        return None
    return [d for d in map(document, value) if d]


def last_user(found: list[dict]) -> Optional[str]:
    """The last user message's text: the question a turn answers."""
    return next((m["content"] for m in reversed(found) if m["role"] == "user"), None)

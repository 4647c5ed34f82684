"""Anthropic's Messages API as the stand-in speaks it: a request read as LangChain messages and tools for the
offline backends, and the bodies it answers (a message with its usage, an error)."""
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def error_body(status: int, message: str) -> dict:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def text_of(content: Any) -> str:
    """A message's (or a tool result's) content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def last_user_text(messages: list[dict]) -> str:
    """The text of the last user turn that has text (a turn carrying tool results alone has none)."""
    for message in reversed(messages):
        if message.get("role") == "user" and text_of(message.get("content")):
            return text_of(message.get("content"))
    return ""


def to_langchain(body: dict) -> list[BaseMessage]:
    """A Messages API request as LangChain messages: the system prompt, user text, the assistant's tool_use
    blocks as tool calls, and the tool_result blocks as ToolMessages paired with them by id."""
    out: list[BaseMessage] = [SystemMessage(text_of(body["system"]))] if body.get("system") else []
    names: dict[str, str] = {}
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            calls = [{"name": b["name"], "args": b.get("input") or {}, "id": b["id"], "type": "tool_call"}
                     for b in blocks if b.get("type") == "tool_use"]
            names.update({c["id"]: c["name"] for c in calls})
            out.append(AIMessage(text_of(content), tool_calls=calls))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                out.append(ToolMessage(text_of(block.get("content")), tool_call_id=block["tool_use_id"],
                                       name=names.get(block["tool_use_id"])))
        if text_of(content):
            out.append(HumanMessage(text_of(content)))
    return out


def openai_tools(body: dict) -> list[dict]:
    """Anthropic tool definitions in the OpenAI shape the rules model reads."""
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t.get("input_schema") or {}}}
            for t in body.get("tools") or []]


def message(model: str, number: int, blocks: list[dict], stop: str, tokens: tuple[int, int]) -> dict:
    """A Messages API answer."""
    return {"id": f"msg_standin_{number}", "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}

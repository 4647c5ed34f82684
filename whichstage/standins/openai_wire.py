"""OpenAI's REST API as the stand-in speaks it: a Chat Completions request read as LangChain messages and tools
for the offline backends, the schema a judge request asks for, and the bodies it answers (a completion with
tool calls and usage, embeddings in either encoding, a model, an error)."""
import base64
import json
import struct
from typing import Any, Optional

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
               429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}
MESSAGES = {429: "Rate limit reached for requests.",
            500: "The server had an error while processing your request. Sorry about that!",
            503: "The engine is currently overloaded, please try again later."}


def error_body(status: int, message: str, code: Optional[str] = None) -> dict:
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "param": None,
                      "code": code}}


def model_body(name: str) -> dict:
    """What GET /v1/models/NAME answers."""
    return {"id": name, "object": "model", "created": 1767225600, "owned_by": "stand-in"}


def text_of(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


def last_user_text(messages: list[dict]) -> str:
    return next((text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")


def to_langchain(messages: list[dict]) -> list[BaseMessage]:
    """Chat Completions messages as LangChain messages; a tool message is named by the call it answers."""
    out: list[BaseMessage] = []
    names: dict[str, str] = {}
    for m in messages:
        role, text = m.get("role"), text_of(m.get("content"))
        if role in ("system", "developer"):
            out.append(SystemMessage(text))
        elif role == "user":
            out.append(HumanMessage(text))
        elif role == "assistant":
            calls = [{"name": c["function"]["name"], "args": json.loads(c["function"].get("arguments") or "{}"),
                      "id": c["id"], "type": "tool_call"} for c in m.get("tool_calls") or []]
            names.update({c["id"]: c["name"] for c in calls})
            out.append(AIMessage(text, tool_calls=calls))
        elif role == "tool":
            call_id = m.get("tool_call_id", "")
            out.append(ToolMessage(text, tool_call_id=call_id, name=names.get(call_id, "")))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return out


def schema_of(body: dict) -> tuple[str, dict]:
    """A judge request's schema name and JSON schema (response_format json_schema); ("", {}) for JSON mode."""
    shape = body.get("response_format") or {}
    schema = shape.get("json_schema") or {}
    return schema.get("name", ""), schema.get("schema") or {}


def is_judge(body: dict) -> bool:
    return (body.get("response_format") or {}).get("type") in ("json_schema", "json_object")


def usage(prompt_tokens: int, answer_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": answer_tokens,
            "total_tokens": prompt_tokens + answer_tokens}


def completion(model: str, text: str, calls: list[dict], tokens_in: int, tokens_out: int) -> dict:
    """A chat.completion: the answer's text, its tool calls (arguments as JSON text), and usage."""
    message: dict = {"role": "assistant", "content": text or None, "refusal": None}
    if calls:
        message["tool_calls"] = [{"id": c.get("id") or f"call_{i}", "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
                                 for i, c in enumerate(calls)]
    return {"id": "chatcmpl-standin", "object": "chat.completion", "created": 1767225600, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": usage(tokens_in, tokens_out)}


def embeddings(model: str, vectors: list[list[float]], encoding: str, tokens: int) -> dict:
    """An embeddings list, each vector as floats or, as the openai SDK asks by default, base64 float32."""
    def encoded(vector: list[float]):
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if encoding == "base64" \
            else vector
    return {"object": "list", "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            "data": [{"object": "embedding", "index": i, "embedding": encoded(v)} for i, v in enumerate(vectors)]}

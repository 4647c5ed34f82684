"""Gemini's REST API as the stand-in speaks it: a generateContent request read as LangChain messages and
tools for the offline backends, and the bodies it answers (a model's metadata, usageMetadata, an error)."""
import json
from typing import Any, Optional

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

STATUS = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
          500: "INTERNAL", 503: "UNAVAILABLE"}


def is_embedder(name: str) -> bool:
    return "embed" in name


def metadata(name: str) -> dict:
    """What GET /v1/models/NAME answers, in the shape of Google's Model resource."""
    methods = ["embedContent", "batchEmbedContents"] if is_embedder(name) else ["generateContent", "countTokens"]
    return {"name": f"models/{name}", "baseModelId": name, "version": "001", "displayName": f"{name} (stand-in)",
            "description": "A stand-in model answering through the offline backends.",
            "inputTokenLimit": 1048576, "outputTokenLimit": 65536 if not is_embedder(name) else 1,
            "supportedGenerationMethods": methods}


def error_body(code: int, message: str, details: Optional[list] = None) -> dict:
    error = {"code": code, "message": message, "status": STATUS.get(code, "UNKNOWN")}
    if details:
        error["details"] = details
    return {"error": error}


def texts_of(content: dict) -> list[str]:
    return [p["text"] for p in content.get("parts") or [] if isinstance(p.get("text"), str)]


def last_user_text(contents: list[dict]) -> str:
    """The text of the last user turn that has text (a turn carrying function responses has none)."""
    for content in reversed(contents):
        if content.get("role", "user") == "user" and texts_of(content):
            return "\n".join(texts_of(content))
    return ""


def tool_output(response: Any) -> str:
    """A functionResponse's `response` as the tool's own output: ChatGoogleGenerativeAI sends a JSON object
    output as is and wraps anything else as {"output": ...}."""
    if isinstance(response, dict) and set(response) == {"output"}:
        output = response["output"]
        return output if isinstance(output, str) else json.dumps(output)
    return json.dumps(response)


def to_langchain(body: dict) -> list[BaseMessage]:
    """A generateContent request as LangChain messages: systemInstruction, user text, the model's
    functionCall parts as tool calls, and the functionResponse parts as ToolMessages paired with them."""
    out: list[BaseMessage] = []
    system = texts_of(body.get("systemInstruction") or {})
    if system:
        out.append(SystemMessage("\n".join(system)))
    pending: list[dict] = []
    for content in body.get("contents") or []:
        role, parts = content.get("role", "user"), content.get("parts") or []
        text = "".join(texts_of(content))
        if role == "model":
            calls = [{"name": p["functionCall"]["name"], "args": p["functionCall"].get("args") or {},
                      "id": f"call_{len(out)}_{i}", "type": "tool_call"}
                     for i, p in enumerate(x for x in parts if "functionCall" in x)]
            out.append(AIMessage(text, tool_calls=calls))
            pending = list(calls)
            continue
        if role != "user":
            raise ValueError(f"unsupported content role {role!r}")
        for part in parts:
            if "functionResponse" in part:
                result = part["functionResponse"]
                match = next((c for c in pending if c["name"] == result.get("name")), None)
                if match:
                    pending.remove(match)
                out.append(ToolMessage(tool_output(result.get("response")), name=result.get("name"),
                                       tool_call_id=match["id"] if match else "call_unknown"))
        if text:
            out.append(HumanMessage(text))
    return out


def openai_tools(body: dict) -> list[dict]:
    """Gemini functionDeclarations in the OpenAI shape the rules model reads."""
    return [{"type": "function", "function": {"name": d["name"], "description": d.get("description", ""),
                                              "parameters": d.get("parameters") or {}}}
            for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []]


def usage(prompt_tokens: int, answer_tokens: int) -> dict:
    return {"promptTokenCount": prompt_tokens, "candidatesTokenCount": answer_tokens,
            "totalTokenCount": prompt_tokens + answer_tokens}

"""OTLP spans following the OpenInference conventions (what openinference-instrumentation-langchain writes):
`openinference.span.kind` LLM (`llm.input_messages` / `llm.output_messages`, flattened, with their tool
calls; `llm.token_count.*`), TOOL (`tool.name`, `input.value`, `output.value`: the ToolMessage), RETRIEVER
(`retrieval.documents.N.document.id / content / metadata`), AGENT or CHAIN (`input.value`, `metadata`)."""
from typing import Any

from whichstage.traces import messages as msgs
from whichstage.traces.otlp import common, flattened
from whichstage.traces.spans import case_of, count


def is_openinference(raw: Any) -> bool:
    """Whether an OTLP span carries an OpenInference span kind."""
    from openinference.semconv.trace import SpanAttributes

    return isinstance(raw, dict) and any(isinstance(a, dict) and a.get("key") == SpanAttributes.OPENINFERENCE_SPAN_KIND
                                         for a in raw.get("attributes") or [])


def flat_messages(attrs: dict, prefix: str) -> list[dict]:
    """llm.input_messages.N.message.* as messages (role, content, tool_calls.M.tool_call.*, name,
    tool_call_id)."""
    from openinference.semconv.trace import MessageAttributes, ToolCallAttributes

    role_key, content_key = MessageAttributes.MESSAGE_ROLE, MessageAttributes.MESSAGE_CONTENT
    found = []
    for item in flattened(attrs, prefix):
        node = item.get("message") or {}
        role, content = node.get(role_key.split(".", 1)[1]), node.get(content_key.split(".", 1)[1])
        calls = node.get(MessageAttributes.MESSAGE_TOOL_CALLS.split(".", 1)[1]) or {}
        listed = []
        for key in sorted(calls, key=lambda k: int(k) if k.isdigit() else 0) if isinstance(calls, dict) else []:
            call = (calls[key] or {}).get("tool_call") or {}
            function = call.get("function") or {}
            listed.append({"id": call.get(ToolCallAttributes.TOOL_CALL_ID.split(".", 1)[1]),
                           "function": {"name": function.get("name"), "arguments": function.get("arguments")}})
        message = msgs.message({"role": role, "content": content, "tool_calls": listed,
                                **{k: node[k] for k in ("name", "tool_call_id") if isinstance(node.get(k), str)}})
        if message:
            found.append(message)
    return found


def openinference_span(label: str, where: str, raw: Any) -> dict:
    """An OTLP span read by the OpenInference conventions: spans.py's shape."""
    from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues as Kinds, SpanAttributes

    found, attrs = common(label, where, raw)
    kind = attrs.get(SpanAttributes.OPENINFERENCE_SPAN_KIND)
    found["case"] = case_of({**(msgs.parsed(attrs.get(SpanAttributes.METADATA)) or {}), **attrs}
                            if isinstance(msgs.parsed(attrs.get(SpanAttributes.METADATA)), dict) else attrs)
    given, output = attrs.get(SpanAttributes.INPUT_VALUE), attrs.get(SpanAttributes.OUTPUT_VALUE)
    if kind == Kinds.LLM.value:
        found["kind"] = "llm"
        found["input"] = flat_messages(attrs, SpanAttributes.LLM_INPUT_MESSAGES) or msgs.messages(given)
        found["output"] = flat_messages(attrs, SpanAttributes.LLM_OUTPUT_MESSAGES)
        found["usage"] = {field: count(attrs[name], name, label, where, found["id"])
                          for field, name in (("input_tokens", SpanAttributes.LLM_TOKEN_COUNT_PROMPT),
                                              ("output_tokens", SpanAttributes.LLM_TOKEN_COUNT_COMPLETION))
                          if attrs.get(name) is not None}
    elif kind == Kinds.TOOL.value:
        found["kind"] = "tool"
        found["tool"] = attrs.get(SpanAttributes.TOOL_NAME) or found["name"]
        found["content"], found["artifact"] = msgs.tool_result(output)
        args = msgs.parsed(given)
        found["args"] = args if isinstance(args, dict) else None
        message = msgs.message(output)
        found["call_id"] = (message or {}).get("tool_call_id")
    elif kind == Kinds.RETRIEVER.value:
        found["kind"] = "retriever"
        docs = []
        for item in flattened(attrs, SpanAttributes.RETRIEVAL_DOCUMENTS):
            node = item.get("document") or {}
            docs.append({"id": node.get(DocumentAttributes.DOCUMENT_ID.split(".", 1)[1]),
                         "page_content": node.get(DocumentAttributes.DOCUMENT_CONTENT.split(".", 1)[1]) or "",
                         "metadata": node.get(DocumentAttributes.DOCUMENT_METADATA.split(".", 1)[1])})
        found["documents"] = [d for d in map(msgs.document, docs) if d]
    elif kind in (Kinds.AGENT.value, Kinds.CHAIN.value):
        found["kind"] = "agent" if kind == Kinds.AGENT.value else "chain"
        found["question"] = msgs.last_user(msgs.messages(given)) or (given if isinstance(given, str) and
                                                                     msgs.parsed(given) is given else None)
    return found

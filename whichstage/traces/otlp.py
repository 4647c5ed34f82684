"""OTLP JSON spans (`resourceSpans[].scopeSpans[].spans[]`, attributes as `{key, value: {stringValue |
intValue | ...}}`) following the OpenTelemetry GenAI conventions: `gen_ai.operation.name` chat (or
text_completion, generate_content) is a model call with `gen_ai.input.messages` / `gen_ai.output.messages`
and `gen_ai.usage.*`; execute_tool a tool call (`gen_ai.tool.name`, `gen_ai.tool.call.arguments`,
`gen_ai.tool.call.result`); retrieval a retriever (`gen_ai.retrieval.documents`); invoke_agent the agent.
What OpenLLMetry's opentelemetry-instrumentation-langchain writes besides (its traceloop.* attributes: a
retriever's documents, older versions' flattened gen_ai.prompt.N / gen_ai.completion.N) is read too."""
import ast
from typing import Any, Optional

from whichstage.traces import messages as msgs
from whichstage.traces.spans import case_of, count, fault, seconds, span

# OpenLLMetry's own names (its package, opentelemetry-semantic-conventions-ai, is not in the `traces` extra;
# tests/traces/test_conventions.py holds these to it).
TRACELOOP_SPAN_KIND = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"
TRACELOOP_ASSOCIATION_PROPERTIES = "traceloop.association.properties"
VALUE_KINDS = ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue")


def value_of(value: Any) -> Any:
    """An OTLP AnyValue as a Python value: a string, number, bool, list (arrayValue) or dict (kvlistValue)."""
    if not isinstance(value, dict):
        return None
    for kind in VALUE_KINDS:
        if kind in value:
            return value[kind]
    if isinstance(value.get("arrayValue"), dict):
        return [value_of(v) for v in value["arrayValue"].get("values") or []]
    if isinstance(value.get("kvlistValue"), dict):
        return attributes(value["kvlistValue"].get("values"))
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP attributes ([{key, value}]) as a dict; an item without a string key is left out."""
    if not isinstance(items, list):
        return {}
    return {item["key"]: value_of(item.get("value")) for item in items
            if isinstance(item, dict) and isinstance(item.get("key"), str)}


def common(label: str, where: str, raw: Any) -> tuple[dict, dict]:
    """A raw OTLP span's common fields (spans.span) and its attributes."""
    if not isinstance(raw, dict):
        raise fault(label, where, None, "not an object (a span)")
    found = span(label, where, raw.get("traceId"), raw.get("spanId"), raw.get("parentSpanId"), raw.get("name"),
                 seconds(raw.get("startTimeUnixNano"), 1e-9), seconds(raw.get("endTimeUnixNano"), 1e-9))
    return found, attributes(raw.get("attributes"))


def flattened(attrs: dict, prefix: str) -> list[dict]:
    """Attributes flattened as PREFIX.N.FIELD (FIELD dotted further) as a list of nested dicts, by N."""
    items: dict[int, dict] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start):].partition(".")
        if not index.isdigit() or not rest:
            continue
        node = items.setdefault(int(index), {})
        *path, last = rest.split(".")
        for part in path:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[last] = value
    return [items[i] for i in sorted(items)]


def legacy_messages(attrs: dict, prefix: str) -> list[dict]:
    """Older OpenLLMetry's gen_ai.prompt.N.* / gen_ai.completion.N.* (role, content, tool_calls.M.*)."""
    found = []
    for item in flattened(attrs, prefix):
        calls = item.get("tool_calls")
        item = {**item, "tool_calls": [calls[k] for k in sorted(calls, key=lambda k: int(k) if k.isdigit() else 0)]
                if isinstance(calls, dict) else []}
        item.setdefault("role", "assistant" if prefix.endswith("completion") else "user")
        message = msgs.message(item)
        if message:
            found.append(message)
    return found


def python_arguments(value: Any) -> Optional[dict]:
    """OpenLLMetry's tool input, {"input_str": "{'query': ...}"} (a Python literal), as the call's arguments."""
    value = msgs.parsed(value)
    text = value.get("input_str") if isinstance(value, dict) else None
    if not isinstance(text, str) or len(text) > 100_000:
        return None
    try:
        found = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def genai_span(label: str, where: str, raw: Any) -> dict:
    """An OTLP span read by the GenAI conventions (and OpenLLMetry's additions): spans.py's shape."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

    found, attrs = common(label, where, raw)
    op = attrs.get(gen_ai.GEN_AI_OPERATION_NAME)
    ops = gen_ai.GenAiOperationNameValues
    output = msgs.parsed(attrs.get(TRACELOOP_ENTITY_OUTPUT))
    legacy = any(k.startswith(gen_ai.GEN_AI_COMPLETION + ".") for k in attrs)
    props = {k.rsplit(".", 1)[1]: v for k, v in attrs.items() if k.startswith(TRACELOOP_ASSOCIATION_PROPERTIES + ".")}
    found["case"] = case_of({**props, **attrs})
    if op in (ops.CHAT.value, ops.TEXT_COMPLETION.value, ops.GENERATE_CONTENT.value) or op is None and legacy:
        found["kind"] = "llm"
        found["input"] = msgs.messages(attrs.get(gen_ai.GEN_AI_INPUT_MESSAGES)) or \
            legacy_messages(attrs, gen_ai.GEN_AI_PROMPT)
        found["output"] = msgs.messages(attrs.get(gen_ai.GEN_AI_OUTPUT_MESSAGES)) or \
            legacy_messages(attrs, gen_ai.GEN_AI_COMPLETION)
        usage = {}
        for field, names in (("input_tokens", (gen_ai.GEN_AI_USAGE_INPUT_TOKENS, gen_ai.GEN_AI_USAGE_PROMPT_TOKENS)),
                             ("output_tokens", (gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS,
                                                gen_ai.GEN_AI_USAGE_COMPLETION_TOKENS))):
            name = next((n for n in names if attrs.get(n) is not None), None)
            if name is not None:
                usage[field] = count(attrs[name], name, label, where, found["id"])
        found["usage"] = usage
    elif op == ops.EXECUTE_TOOL.value or op is None and attrs.get(TRACELOOP_SPAN_KIND) == "tool":
        found["kind"] = "tool"
        found["tool"] = attrs.get(gen_ai.GEN_AI_TOOL_NAME) or attrs.get(TRACELOOP_ENTITY_NAME) or found["name"]
        result = attrs.get(gen_ai.GEN_AI_TOOL_CALL_RESULT, attrs.get(TRACELOOP_ENTITY_OUTPUT))
        found["content"], found["artifact"] = msgs.tool_result(result)
        given = attrs.get(gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS, attrs.get(TRACELOOP_ENTITY_INPUT))
        found["args"] = python_arguments(given) or (msgs.parsed(given) if isinstance(msgs.parsed(given), dict)
                                                    and "input_str" not in msgs.parsed(given) else None)
        found["call_id"] = attrs.get(gen_ai.GEN_AI_TOOL_CALL_ID)
    elif op == ops.RETRIEVAL.value or msgs.documents(output) is not None and isinstance(output, dict):
        found["kind"] = "retriever"
        found["documents"] = msgs.documents(attrs.get(gen_ai.GEN_AI_RETRIEVAL_DOCUMENTS)) or \
            msgs.documents(output) or []
    elif op in (ops.INVOKE_AGENT.value, ops.INVOKE_WORKFLOW.value):
        found["kind"] = "agent"
    return found

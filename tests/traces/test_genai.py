"""Spans by the OpenTelemetry GenAI conventions alone (no instrumentor's additions): an invoke_agent root, chat
spans with gen_ai.input/output.messages, an execute_tool span and the retrieval span under it with
gen_ai.retrieval.documents."""
import json

from traced import imported_rows, whichstage_cli
from traced import made, notes  # noqa: F401  (fixtures)

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(ident: str, parent, op: str, start: int, **attributes) -> dict:
    found = {"traceId": TRACE, "spanId": ident, "name": op, "startTimeUnixNano": str(start),
             "endTimeUnixNano": str(start + 10), "attributes": [
                 {"key": "gen_ai.operation.name", "value": {"stringValue": op}},
                 *({"key": k, "value": {"intValue": v} if isinstance(v, int) else {"stringValue": v}}
                   for k, v in attributes.items())]}
    return {**found, "parentSpanId": parent} if parent else found


def test_genai_spans_give_the_calls_pages_answer_and_tokens(notes, tmp_path):
    question = "Do notes I edit offline get synced?"
    user = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    call = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "search_help",
                                             "arguments": {"query": "offline"}}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "Yes: they sync when back online."}]}]
    docs = [{"id": "pages/sync.md", "content": "Notes edited offline sync when the app is back online."}]
    spans = [
        span("00f067aa0ba902b1", "00f067aa0ba902b0", "chat", 2, **{
            "gen_ai.input.messages": json.dumps(user), "gen_ai.output.messages": json.dumps(call),
            "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 5}),
        span("00f067aa0ba902b3", "00f067aa0ba902b2", "retrieval", 4,
             **{"gen_ai.retrieval.documents": json.dumps(docs)}),
        span("00f067aa0ba902b2", "00f067aa0ba902b0", "execute_tool", 3, **{
            "gen_ai.tool.name": "search_help", "gen_ai.tool.call.arguments": '{"query": "offline"}',
            "gen_ai.tool.call.result": "Notes edited offline sync when the app is back online."}),
        span("00f067aa0ba902b4", "00f067aa0ba902b0", "chat", 5, **{
            "gen_ai.input.messages": json.dumps(user), "gen_ai.output.messages": json.dumps(answer),
            "gen_ai.usage.input_tokens": 60, "gen_ai.usage.output_tokens": 9}),
        span("00f067aa0ba902b0", None, "invoke_agent", 1),
    ]
    path = tmp_path / "genai.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    assert whichstage_cli("import", str(path)) == 0
    assert whichstage_cli("run", "--model", "imported", "--live", "--quiet") == 0
    row = imported_rows(notes)["offline-edits"]
    assert row["tool_calls"] == [{"name": "search_help", "args": {"query": "offline"}}]
    assert row["retrieved"] == ["pages/sync.md"] and row["answer"] == "Yes: they sync when back online."
    assert row["usage"] == {"input_tokens": 90, "output_tokens": 14}

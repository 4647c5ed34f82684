"""For the trace tests: a LangChain agent's run instrumented through an in-memory span exporter, and its spans
written as an OTLP JSON file, as an OTel collector's file exporter writes them."""
import json
from pathlib import Path
from typing import Any, Iterable


def any_value(value: Any) -> dict:
    """A span attribute's value as OTLP JSON's AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def span_json(span) -> dict:
    """An SDK ReadableSpan as an OTLP JSON span."""
    found = {"traceId": format(span.context.trace_id, "032x"), "spanId": format(span.context.span_id, "016x"),
             "name": span.name, "kind": span.kind.value + 1, "startTimeUnixNano": str(span.start_time),
             "endTimeUnixNano": str(span.end_time),
             "attributes": [{"key": k, "value": any_value(v)} for k, v in (span.attributes or {}).items()]}
    if span.parent is not None:
        found["parentSpanId"] = format(span.parent.span_id, "016x")
    return found


def otlp_request(spans: Iterable) -> dict:
    """Finished spans as one OTLP export request (resourceSpans / scopeSpans / spans)."""
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                            "value": {"stringValue": "agent"}}]},
                               "scopeSpans": [{"scope": {"name": "test"}, "spans": [span_json(s) for s in spans]}]}]}


def write_otlp(path: Path, spans: Iterable) -> Path:
    path.write_text(json.dumps(otlp_request(spans), indent=1))
    return path


def instrumented(instrumentor: str):
    """(tracer provider, exporter, uninstrument) with the named LangChain instrumentor: "openinference" or
    "openllmetry"."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if instrumentor == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor as LangChainInstrumentor
    tool = LangChainInstrumentor()
    tool.instrument(tracer_provider=provider)
    return exporter, tool.uninstrument


def finished(exporter, roots: int, timeout: float = 20.0) -> list:
    """The exporter's spans once `roots` root spans have ended: an agent's root span can end on another thread
    after its run returns."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        spans = exporter.get_finished_spans()
        if sum(s.parent is None for s in spans) >= roots or time.monotonic() > deadline:
            return list(spans)
        time.sleep(0.02)


if __name__ == "__main__":  # python otlp_files.py INSTRUMENTOR PROJECT OUT: the project's cases run, its spans written
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from traced import agent_runs

    instrumentor, project, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    questions = [c["question"] for c in json.loads((project / "cases.json").read_text())["cases"]]
    exporter, uninstrument = instrumented(instrumentor)
    agent_runs(project, questions)
    uninstrument()
    write_otlp(out, finished(exporter, len(questions) + (instrumentor == "openllmetry")))  # + its create_agent

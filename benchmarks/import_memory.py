"""`whichstage import` of a big trace file in bounded memory: a synthetic OpenInference file of N spans (default
100,000: traces of 10 spans each, as openinference-instrumentation-langchain writes a LangGraph agent's run of a
search, then an answer, children before their parents), written as ONE OTLP JSON document (and with --jsonl
as one export request a line, as a collector's file exporter writes them), imported into a project made by
`whichstage init`, in a fresh process whose peak memory (maximum resident set) and time are measured; a few of
its traces match the project's cases, the rest are drafted.

    python benchmarks/import_memory.py [N ...] [--jsonl] [--keep DIR]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["pages/sync.md", "pages/export.md"]


def attrs(**values) -> list[dict]:
    return [{"key": k.replace("__", "."), "value": {"intValue": str(v)} if isinstance(v, int) else
             {"stringValue": v}} for k, v in values.items()]


def trace_spans(n: int, question: str) -> list[dict]:
    """One agent run's 10 spans (OpenInference), children first, as an exporter writes them when they end."""
    trace, ids = f"{n:032x}", [f"{n:012x}{i:04x}" for i in range(10)]
    root, model1, llm1, tools, tool, retriever, model2, llm2, extra1, extra2 = ids
    text = ("Acme Notes syncs every note to your account within a minute of a change. " * 4).strip()
    docs = {f"retrieval.documents.{i}.document.{f}": v for i, page in enumerate(PAGES)
            for f, v in (("content", text), ("metadata", json.dumps({"source": page, "id": page})))}
    call = json.dumps({"query": question})
    kind = "openinference.span.kind"

    def span(ident, parent, name, start, **values):
        found = {"traceId": trace, "spanId": ident, "name": name, "kind": 1, "startTimeUnixNano": str(start),
                 "endTimeUnixNano": str(start + 1000), "attributes": attrs(**values)}
        return {**found, "parentSpanId": parent} if parent else found

    base = 1_800_000_000_000_000_000 + n * 1_000_000
    messages = {"llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": question}
    return [
        span(llm1, model1, "RulesChatModel", base + 1, **{kind: "LLM"}, **messages, **{
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_0",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search_help",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": call,
            "llm.token_count.prompt": 38, "llm.token_count.completion": 11}),
        span(model1, root, "model", base, **{kind: "CHAIN"}),
        span(retriever, tool, "VectorStoreRetriever", base + 3, **{kind: "RETRIEVER", "input.value": question},
             **docs),
        span(tool, tools, "search_help", base + 2, **{kind: "TOOL", "tool.name": "search_help",
                                                       "input.value": question, "output.value": text}),
        span(extra1, tools, "ToolNode", base + 2, **{kind: "CHAIN"}),
        span(tools, root, "tools", base + 2, **{kind: "CHAIN", "input.value": call}),
        span(llm2, model2, "RulesChatModel", base + 5, **{kind: "LLM"}, **messages, **{
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": text, "llm.token_count.prompt": 95,
            "llm.token_count.completion": 29}),
        span(extra2, model2, "RunnableSequence", base + 5, **{kind: "CHAIN"}),
        span(model2, root, "model", base + 4, **{kind: "CHAIN"}),
        span(root, None, "LangGraph", base - 1, **{kind: "CHAIN", "input.value": json.dumps(
            {"messages": [{"type": "human", "data": {"content": question}}]})}),
    ]


def write(path: Path, spans: int, jsonl: bool, questions: list[str]) -> None:
    """N spans (a multiple of 10) as one OTLP document, or one request per trace per line; every 1,000th trace
    asks a case's question, the others a question of their own."""
    with path.open("w") as f:
        if not jsonl:
            f.write('{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "b"}, '
                    '"spans": [\n')
        for n in range(spans // 10):
            asked = questions[(n // 1000) % len(questions)] if n % 1000 == 0 else f"Question number {n}?"
            found = trace_spans(n, asked)
            if jsonl:
                f.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": found}]}]}) + "\n")
            else:
                f.write((",\n" if n else "") + ",\n".join(json.dumps(s) for s in found))
        if not jsonl:
            f.write("\n]}]}]}\n")


def measure(project: Path, file: Path) -> tuple[int, float, int, str]:
    """(exit code, wall seconds, peak MB, its line) of `whichstage import FILE` in a fresh process."""
    env = {**os.environ, "DOCS_MODEL": "rules", "DOCS_EMBEDDER": "hash", "DOCS_JUDGE": "lexical",
           "PYTHONPATH": str(ROOT)}
    code = ("import resource, subprocess, sys, time\nstart = time.perf_counter()\n"
            "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "took = time.perf_counter() - start\nused = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(done.returncode, round(took, 2), used.ru_maxrss // 1024, done.stderr.strip()[-300:], sep='\\t')")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "whichstage", "import", str(file),
                          "--project", str(project)], env=env, capture_output=True, text=True, check=True).stdout
    rc, took, peak, line = out.strip().split("\t", 3)
    return int(rc), float(took), int(peak), line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spans", nargs="*", type=int, default=[100_000])
    parser.add_argument("--jsonl", action="store_true", help="one export request a line, not one document")
    parser.add_argument("--keep", metavar="DIR", help="make the project and files in DIR, and leave them")
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="import-memory-"))
    project = folder / "notes"
    if not project.exists():
        subprocess.run([sys.executable, "-m", "whichstage", "init", str(project)], check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
    questions = [c["question"] for c in json.loads((project / "cases.json").read_text())["cases"]]
    print("| spans | file | file MB | exit | wall s | peak MB |\n|---|---|---|---|---|---|")
    for spans in args.spans:
        file = folder / f"spans-{spans}.{'jsonl' if args.jsonl else 'json'}"
        start = time.perf_counter()
        write(file, spans, args.jsonl, questions)
        made = time.perf_counter() - start
        rc, took, peak, line = measure(project, file)
        print(f"| {spans:,} | {'JSONL' if args.jsonl else 'one document'} | {file.stat().st_size / 1e6:.0f} | {rc} "
              f"| {took} | {peak} |", flush=True)
        print(f"  (written in {made:.1f} s; {line})", file=sys.stderr)
    print(f"self: peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB", file=sys.stderr)


if __name__ == "__main__":
    main()

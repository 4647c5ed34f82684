"""Traces in: `whichstage import FILE` reads the traces of a LangChain agent's runs that another tool wrote
(OTLP JSON with the GenAI or the OpenInference conventions, a LangSmith run export, a JSONL of chat messages),
one module per format, each giving the same spans (spans.py); mapping.py makes a trace of the harness's shape
of each, matching.py finds its case (or drafts one), importing.py writes the recording (docs/traces.md)."""

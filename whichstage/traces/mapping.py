"""One imported trace (its spans, spans.py's shape) as a recorded trace of the harness's shape (what
whichstage/agent/capture.py records of its own runs): the tool calls from the model calls' outputs, in order
(from the tool spans when no model call names them), each tool span's output with the pages it returned (its
ToolMessage's artifact, and as callbacks the documents of the retriever spans under it), the answer from the
last model call's output, the tokens summed, the agent's time from its root span; and `source`, which names
the file, the trace and its spans. Pure."""
from typing import Any, Optional, cast

from whichstage.traces.messages import document, last_user
from whichstage.model.dicts import TraceDict


class Imported:
    """A trace made from a file's spans: `trace` (the harness's shape), its `question`, the case id its
    metadata names (`case`), where its root is in the file (`where`)."""

    def __init__(self, trace: TraceDict, question: str, case: Optional[str], where: str):
        self.trace, self.question, self.case, self.where = trace, question, case, where

    @property
    def source(self) -> dict:
        return self.trace["source"]


def ordered(spans: list[dict]) -> list[dict]:
    """Spans by start time (file order among equals and for spans with no time)."""
    return [s for _, s in sorted(enumerate(spans), key=lambda p: (p[1]["start"] is None, p[1]["start"] or 0, p[0]))]


def root_of(spans: list[dict]) -> dict:
    """The trace's root: a span whose parent is not in it, an agent's before any other."""
    ids = {s["id"] for s in spans}
    roots = [s for s in spans if not s["parent"] or s["parent"] not in ids]
    return next((s for s in roots if s["kind"] == "agent"), (roots or spans)[0])


def below(spans: list[dict]) -> dict[str, list[dict]]:
    """Each span's children, in order."""
    children: dict[str, list[dict]] = {}
    for s in spans:
        if s["parent"]:
            children.setdefault(s["parent"], []).append(s)
    return children


def retrieved(span: dict, children: dict[str, list[dict]]) -> tuple[list[dict], list[str]]:
    """The documents every retriever span under a tool span returned, in order, and those spans' ids."""
    pages: list[dict] = []
    ids: list[str] = []
    todo, seen = list(children.get(span["id"], [])), set()
    while todo:
        s = todo.pop(0)
        if s["id"] in seen:  # a loop of parents in a hostile file: each span once
            continue
        seen.add(s["id"])
        if s["kind"] == "retriever":
            pages += s.get("documents") or []
            ids.append(s["id"])
        todo = children.get(s["id"], []) + todo
    return pages, ids


def pages(artifact: Any) -> Optional[list[dict]]:
    """A ToolMessage artifact that is a list of Documents, as pages; None for any other artifact."""
    if not isinstance(artifact, list) or not artifact:
        return None
    if not all(isinstance(d, dict) and ("page_content" in d or "kwargs" in d) for d in artifact):
        return None
    found = [document(d) for d in artifact]
    return [d for d in found if d is not None] if all(found) else None


def harness_trace(spans: list[dict], fmt: str, file: str, actions: frozenset = frozenset()) -> Optional[Imported]:
    """The trace of one imported run; None for a trace that holds no agent run (no model call, no
    conversation: an agent's construction, a stray span). `actions` are the project's action tools, whose
    calls a trace holds as proposed."""
    spans = ordered(spans)
    root, llms = root_of(spans), [s for s in spans if s["kind"] == "llm"]
    if not llms:
        return None
    question = root.get("question") or last_user(llms[0].get("input") or []) or next(
        (s["question"] for s in spans if s.get("question")), None)
    if not question:
        return None
    calls = [{"name": c["name"], "args": c["args"]} for s in llms for m in s.get("output") or []
             if m["role"] == "assistant" for c in m["tool_calls"]]
    answers = [m for m in llms[-1].get("output") or [] if m["role"] == "assistant"]
    children, outputs = below(spans), []
    tools = [s for s in spans if s["kind"] == "tool"]
    for s in tools:
        output: dict = {"tool": s["tool"], "content": s.get("content") or "", "span_id": s["id"]}
        artifact = pages(s.get("artifact"))
        if artifact is not None:
            output["artifact"] = artifact
        found, retrievers = retrieved(s, children)
        if retrievers:
            output["callbacks"], output["retriever_span_ids"] = found, retrievers
        outputs.append(output)
    if not calls and tools:
        calls = [{"name": s["tool"], "args": s.get("args") or {}} for s in tools]
    usage = {"input_tokens": 0, "output_tokens": 0}
    for s in llms:
        for field in usage:
            usage[field] += (s.get("usage") or {}).get(field, 0)
    took = root["end"] - root["start"] if root["end"] is not None and root["start"] is not None else None
    trace = cast(TraceDict, {  # the harness's trace, made of the spans
        "answer": answers[-1]["content"] if answers else "", "tool_calls": calls, "tool_outputs": outputs,
        "usage": usage, "agent_s": took if took is not None and took >= 0 else None,
        "source": {"format": fmt, "file": file, "trace_id": root["trace"], "span_id": root["id"],
                   "answer_span_id": llms[-1]["id"]}})
    proposed = [{"tool": c["name"], "args": c["args"]} for c in calls if c["name"] in actions]
    if proposed:
        trace["proposed"] = proposed
    case = root.get("case") or next((s["case"] for s in spans if s.get("case")), None)
    return Imported(trace, question, case, root["where"])

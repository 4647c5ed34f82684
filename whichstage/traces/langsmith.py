"""A LangSmith run export: runs as JSON (a list, `{"runs": [...]}`, one run with its `child_runs`) or JSONL,
each with its `run_type` (llm, tool, retriever, chain...), `inputs` and `outputs` as LangChain's tracer wrote
them, `id`, `parent_run_id`, `trace_id`, `start_time` / `end_time` and `extra.metadata`."""
from datetime import datetime
from typing import Any, Iterator, Optional

from whichstage.traces import messages as msgs
from whichstage.traces.spans import case_of, count, fault, span


def is_run(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("run_type"), str)


def when(value: Any) -> Optional[float]:
    """An ISO time (LangSmith's start_time, end_time) as seconds since the epoch."""
    if not isinstance(value, str):
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if found.tzinfo is None:
        from datetime import timezone

        found = found.replace(tzinfo=timezone.utc)
    return found.timestamp()


def runs(label: str, where: str, value: Any, trace: Optional[str] = None) -> Iterator[dict]:
    """The runs of one exported item (a run and its child_runs, or {"runs": [...]}) as spans.py's spans."""
    if isinstance(value, dict) and isinstance(value.get("runs"), list) and not is_run(value):
        for i, item in enumerate(value["runs"]):
            yield from runs(label, f"{where} runs[{i}]", item)
        return
    if not is_run(value):
        raise fault(label, where, None, "not a LangSmith run (no run_type)")
    found = run_span(label, where, value, trace)
    yield found
    for i, child in enumerate(value.get("child_runs") or []):
        yield from runs(label, f"{where} child_runs[{i}]", child, found["trace"])


def run_span(label: str, where: str, run: dict, trace: Optional[str]) -> dict:
    """One LangSmith run as a span; its trace is its trace_id (or its parent's, or its own id for a root)."""
    ident = run.get("id")
    trace = run.get("trace_id") or trace or (ident if not run.get("parent_run_id") else None)
    if trace is None:
        raise fault(label, where, str(ident), "no trace_id: a run below the root needs its trace's id")
    found = span(label, where, str(trace), None if ident is None else str(ident),
                 None if run.get("parent_run_id") is None else str(run["parent_run_id"]), run.get("name"),
                 when(run.get("start_time")), when(run.get("end_time")))
    inputs, outputs, extra = (run[k] if isinstance(run.get(k), dict) else {} for k in ("inputs", "outputs", "extra"))
    found["case"] = case_of(extra.get("metadata")) or case_of(run.get("metadata"))
    kind = run["run_type"]
    if kind == "llm":
        found["kind"] = "llm"
        found["input"] = msgs.messages(inputs.get("messages")) or [
            {"role": "user", "content": p, "tool_calls": []} for p in inputs.get("prompts") or [] if isinstance(p, str)]
        generations = outputs.get("generations") or []
        flat = [g for item in generations for g in (item if isinstance(item, list) else [item]) if isinstance(g, dict)]
        found["output"] = [m for m in (msgs.message(g.get("message")) or {"role": "assistant", "content": msgs.text_of(
            g.get("text")), "tool_calls": []} for g in flat[-1:]) if m]
        usage = (msgs.unwrapped(flat[-1].get("message")) or {}).get("usage_metadata") if flat else None
        found["usage"] = {f: count(usage[f], f"usage_metadata.{f}", label, where, found["id"])
                          for f in ("input_tokens", "output_tokens")
                          if isinstance(usage, dict) and usage.get(f) is not None}
    elif kind == "tool":
        found["kind"] = "tool"
        found["tool"] = found["name"]
        found["content"], found["artifact"] = msgs.tool_result(outputs.get("output", outputs or None))
        given = msgs.parsed(inputs.get("input"))
        found["args"] = given if isinstance(given, dict) else None
        found["call_id"] = (msgs.message(outputs.get("output")) or {}).get("tool_call_id")
    elif kind == "retriever":
        found["kind"] = "retriever"
        found["documents"] = msgs.documents(outputs) or []
    elif kind == "chain":
        found["kind"] = "chain"
        found["question"] = msgs.last_user(msgs.messages(inputs)) or (
            inputs.get("question") if isinstance(inputs.get("question"), str) else None)
    return found

"""`--live --plan`: what a live run would call, and what it would cost, without calling or writing anything.

The plan is a dry live run: the recording loop runs as it would, but a missing or stale entry is only noted
(with why) and a stand-in value goes on in its place, so the entries that follow from it (a trace's judge
metrics, a retrieval failure's counterfactual run) are planned too. A trace's stand-in is its stale
recorded value, marked so that every verdict reading it is planned again (an upper bound: a verdict whose
inputs come out unchanged is kept), else a trace calling the case's expected tools whose retriever returns
the case's expected pages, so the judge metrics it would get are the ones such a trace gets; a verdict's
stand-in passes. Which new traces will fail at retrieval, and so run again with the expected pages, is
known only once they exist: the plan says how many at most.

Tokens are estimated from the recording's own measured entries of the same kind (agent runs, and each judge
metric apart), else from RULE (said so); prices are the provider's published rates for the named models as
DeepEval carries them for Gemini; a price that is not known is said, never printed as 0.
"""
import json
from collections import Counter, defaultdict
from typing import Any, Callable, Optional

from whichstage.recording.format import entry_count
from whichstage.recording.requests import AGAIN
from whichstage.providers.names import model_of, provider_of
from whichstage.project.selection import case_of
from whichstage.model.dicts import CaseDict

# Tokens per call when the recording has no measured entry of the kind: a rough rule, stated in the plan.
RULE = {"agent": (1500, 150), "judge": (1200, 150)}
KINDS = ("agent runs", "counterfactual runs", "repeats", "tool scores", "judge metrics", "embeddings",
         "ladder rankings")
FREE = {"tool scores": "DeepEval's ToolCorrectnessMetric on names: no model call",
        "ladder rankings": "BM25, local: no model call"}


def kind_of(entry: str) -> str:
    """Which kind of call an entry is, as the plan groups them."""
    head = entry.split("/", 1)[0]
    if head == "agent":
        return "counterfactual runs" if "@" in entry else "repeats" if "#" in entry else "agent runs"
    if head == "ladder":
        return "embeddings" if entry.endswith("/vector") else "ladder rankings"
    return {"tools": "tool scores", "judge": "judge metrics"}.get(head, head)


def predictor(inputs, recorded: dict[str, dict]) -> Callable[[str], Any]:
    """The stand-in value of an entry a plan does not compute (see the module docstring)."""
    by_id = {c["id"]: c for c in inputs.cases["cases"]}

    def output(tool: str, case: CaseDict) -> dict:
        if inputs.project.role_of(tool) != "retriever":
            return {"tool": tool, "content": "(planned)"}
        pages = [{"id": p["id"], "text": p["text"]} for p in inputs.expected_pages(case)]
        return {"tool": tool, "content": json.dumps(pages)}

    def predict(entry: str) -> Any:
        kind = entry.split("/", 1)[0]
        if kind == "agent":
            if entry in recorded:  # a trace run again: its shape, but an answer and calls that may all change
                stale = recorded[entry]["value"]
                return {**stale, "answer": f"(planned) {stale['answer']}",
                        "tool_calls": [{**c, "args": {**c["args"], "(planned)": True}} for c in stale["tool_calls"]]}
            case = by_id[case_of(entry)]
            calls = [{"name": tool, "args": {}} for tool in case["expected_tools"]]
            outputs = [output(tool, case) for tool in case["expected_tools"]]
            return {"answer": "(planned)", "tool_calls": calls, "tool_outputs": outputs, "usage": {}, "agent_s": None}
        if kind == "ladder":
            return [p["id"] for p in inputs.pages]
        return {"score": 1.0, "reason": "(planned)"}
    return predict


def measured(recorded: dict[str, dict]) -> dict[str, tuple[float, float, int]]:
    """Mean tokens in and out per call, from the recording: 'agent' and each judge metric; and how many."""
    sums: dict[str, list] = defaultdict(lambda: [0, 0, 0])
    for name, item in recorded.items():
        value = item.get("value")
        if name.startswith("agent/") and isinstance(value, dict) and value.get("usage"):
            key, tokens = "agent", (value["usage"].get("input_tokens", 0), value["usage"].get("output_tokens", 0))
        elif name.startswith("judge/") and isinstance(value, dict) and value.get("tokens_in") is not None:
            key, tokens = f"judge:{name.rsplit('/', 1)[1]}", (value["tokens_in"], value.get("tokens_out") or 0)
        else:
            continue
        sums[key][0] += tokens[0]
        sums[key][1] += tokens[1]
        sums[key][2] += 1
    return {key: (s[0] / s[2], s[1] / s[2], s[2]) for key, s in sums.items()}


PRICE_TABLES = {"google_genai": "GEMINI_MODELS_DATA", "openai": "OPENAI_MODELS_DATA",
                "anthropic": "ANTHROPIC_MODELS_DATA"}  # deepeval.models.llms.constants


def price(model: str) -> Optional[tuple[float, float]]:
    """(input, output) price per token of a model, from DeepEval's table of its provider (Gemini's, OpenAI's,
    Anthropic's); None when not known."""
    import os

    table = PRICE_TABLES.get(provider_of(model))
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    try:
        from deepeval.models.llms import constants
    except ImportError:
        return None
    data = getattr(constants, table).get(model_of(model)) if table else None
    if data is None or data.input_price is None or data.output_price is None:
        return None
    return data.input_price, data.output_price


def requests_text(planned: list[tuple[str, list[str]]], recorded: dict[str, dict],
                  requests: dict[str, dict]) -> list[str]:
    """The requests a live run would pay for, by kind, as an honest bound: those the stale entries sent when
    recorded (each paid again only if its content changed), plus those of entries never recorded; and how many
    recorded requests other versions of the client libraries sent (their bodies may differ now)."""
    stale = {entry for entry, _ in planned if entry in recorded}
    sent = Counter(r["kind"] for r in requests.values() if stale & set(r["entries"]))
    new = sum(entry not in recorded and kind_of(entry) not in FREE for entry, _ in planned)
    lines = []
    if sent or (new and requests):
        kinds = ", ".join(f"{kind} {sent[kind]}" for kind in ("chat", "embedding", "judge") if sent[kind]) or "none"
        more = f"; plus those of {entry_count(new)} never recorded" if new else ""
        lines.append(f"requests: at most {kinds} (what the stale entries sent when recorded: each is paid again only "
                     f"if its content changed, the rest are served from the recording){more}")
    others, n = other_versions(requests)
    if n:
        lines.append(f"  {n} recorded request{'s were' if n > 1 else ' was'} sent by other client versions ("
                     + ", ".join(others) + "): their bodies may differ now, so an entry run again pays for them again")
    return lines


def other_versions(requests: dict[str, dict]) -> tuple[list[str], int]:
    """The client libraries whose recorded versions (a request's 'name/version' tokens) differ from those
    installed now, as 'google-genai-sdk 3.5.0, now 3.6.1'; and how many recorded requests named one."""
    import re

    installed: dict[str, Optional[str]] = {}
    found: Counter[str] = Counter()
    n = 0
    for record in requests.values():
        differ = []
        for token in record.get("client", "").split():
            name, _, version = token.partition("/")
            version = (re.match(r"[0-9][0-9.]*", version) or [""])[0].rstrip(".")
            if name not in installed:
                installed[name] = version_of(name)
            if installed[name] and version and installed[name] != version:
                differ.append(f"{name} {version}, now {installed[name]}")
        found.update(differ)
        n += bool(differ)
    return sorted(found), n


def version_of(name: str) -> Optional[str]:
    """The installed version of the distribution a client names itself by ('google-genai-sdk' is google-genai's)."""
    from importlib import metadata

    for candidate in dict.fromkeys((name, name.removesuffix("-sdk"), name.removesuffix("-python"))):
        try:
            return metadata.version(candidate)
        except metadata.PackageNotFoundError:
            continue
    return None


def text(planned: list[tuple[str, list[str]]], recorded: dict[str, dict], model: str, embedder: str, judge: str,
         *, batch: bool = False, unforeseen: Optional[dict[str, int]] = None,
         requests: Optional[dict[str, dict]] = None) -> str:
    """The plan as lines: per kind, the calls by reason; tokens and cost, and how each was estimated;
    `unforeseen`, the interventions new traces may call for (unforeseen_interventions)."""
    from whichstage.providers.names import is_offline

    if not planned:
        return "plan: nothing to call: every entry is recorded and current"
    by_kind: dict[str, Counter] = defaultdict(Counter)
    metrics: Counter = Counter()
    for entry, why in planned:
        kind = kind_of(entry)
        by_kind[kind][", ".join(why)] += 1
        if kind == "judge metrics":
            metrics[entry.rsplit("/", 1)[1]] += 1
    seen, lines = measured(recorded), [f"plan: {entry_count(len(planned))} to call with model {model}, embedder "
                                       f"{embedder}, judge {judge}; nothing is called or written"]
    for kind in KINDS:
        if kind in by_kind:
            reasons = "; ".join(f"{why}: {n}" for why, n in by_kind[kind].most_common())
            free = f" ({FREE[kind]})" if kind in FREE else ""
            lines.append(f"  {kind}: {sum(by_kind[kind].values())} ({reasons}){free}")
    lines += [f"  {kind}: at most {n} more, {UNFORESEEN[kind]} (known only once the traces exist; not in the "
              "estimate)" for kind, n in (unforeseen or {}).items() if n]
    runs = sum(by_kind[k].total() for k in ("agent runs", "counterfactual runs", "repeats"))
    estimates = [("agent", model, runs, seen.get("agent"), RULE["agent"])]
    estimates += [(f"judge {m}", judge, n, seen.get(f"judge:{m}"), RULE["judge"]) for m, n in sorted(metrics.items())]
    total, unknown, notes = 0.0, [], []
    for label, name, n, found, rule in estimates:
        if not n:
            continue
        (tin, tout), how = ((found[0], found[1]), f"mean of {found[2]} recorded") if found else (rule, "rule")
        rates = None if is_offline(name) else price(name)
        if is_offline(name):
            cost = "free (an offline backend)"
        elif rates is None:
            cost = f"price unknown for {name}"
            unknown.append(name)
        else:
            half = 0.5 if batch and label.startswith("judge") else 1.0
            amount = n * (tin * rates[0] + tout * rates[1]) * half
            total += amount
            cost = f"${amount:.4f}" + (" at the batch rate (half)" if half < 1 else "")
        notes.append(f"  {label}: {n} x ~{tin:.0f} in / {tout:.0f} out tokens ({how}); {cost}")
    lines += ["estimate (tokens per call from the recording's measured entries of the kind, else the rule of "
              f"{RULE['agent'][0]} in / {RULE['agent'][1]} out for an agent run and {RULE['judge'][0]} / "
              f"{RULE['judge'][1]} for a judge metric):", *notes]
    if by_kind.get("embeddings"):
        queries = by_kind["embeddings"].total()
        lines.append(f"  embeddings: {queries} quer{'y' if queries == 1 else 'ies'} and one index of the pages with "
                     f"{embedder}; their tokens are not recorded, so they are not estimated")
    lines += requests_text(planned, recorded, requests or {})
    said = f"${total:.4f}" if total else "$0"
    lines.append(f"estimated cost: {said}" + (f", plus what {', '.join(dict.fromkeys(unknown))} costs (price "
                                             "unknown)" if unknown else ""))
    return "\n".join(lines)


UNFORESEEN = {"counterfactual runs": "one for each new trace that fails at retrieval",
              "runs with the expected calls": "one for each new trace that fails at tools",
              "answer checks": "one facts request each, two for each new trace that fails at an answer stage",
              "verdicts judged again": "one for each new trace whose failing verdict is in doubt (near its threshold, "
                                       "or of a metric the calibration does not pass)"}


def unforeseen_interventions(planned: list[tuple[str, list[str]]], recorded: dict[str, dict],
                             inputs) -> dict[str, int]:
    """The interventions new traces (none recorded) may call for, by kind (UNFORESEEN): the plan's stand-in
    verdicts all pass, so it cannot tell which will fail."""
    by_id = {c["id"]: c for c in inputs.cases["cases"]}
    new = [by_id[case_of(e)] for e, _ in planned if kind_of(e) == "agent runs" and e not in recorded
           and case_of(e) in by_id]
    return {"counterfactual runs": sum(bool(c["expected_docs"]) for c in new) if inputs.counterfactual else 0,
            "runs with the expected calls": sum(bool(c["expected_tools"]) for c in new),
            "answer checks": sum(1 + bool(c["expected_docs"]) for c in new if c["expected_behavior"] == "answer"),
            "verdicts judged again": len(new) if inputs.project.recheck_within or inputs.unreliable else 0}


def answer_checks_again(planned: list[tuple[str, list[str]]], recorded: dict[str, dict]) -> list[tuple[str, list[str]]]:
    """The recorded answer checks and verdicts judged again of the cases the plan calls again: a case whose
    verdicts change may fail at an answer stage again and ask its check again (what it reads may have changed),
    which the plan's stand-in verdicts, all passing, cannot foresee; so each counts in the bound."""
    cases = {case_of(entry) for entry, _ in planned}
    listed = {entry for entry, _ in planned}
    return [(name, ["its case is called again"]) for name in recorded
            if ("/lacks-in-" in name or name.endswith(AGAIN)) and case_of(name) in cases and name not in listed]

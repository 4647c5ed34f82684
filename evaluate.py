"""Evaluate the docs assistant stage by stage (tools, retrieval, grounding, answer) and name the first failure.

`python evaluate.py` replays every recording in recordings/ against the current inputs, offline;
`python evaluate.py --live` records with DOCS_MODEL, DOCS_EMBEDDER and DOCS_JUDGE. Scoring functions here are
pure; DeepEval and LangChain are imported only inside the functions a live run calls.
"""
import argparse
import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Callable, Optional

from assistant import DEFAULT_MODEL, K, PROMPT, TOOL_DESCRIPTIONS, build_agent, chat_model_name, embedder_name, run
from cassette import Cassette, RecordingError, read_json, shown, write_atomic
from dataset import InputError, load_inputs

HERE = Path(__file__).parent
THRESHOLD = 0.7
STAGES = ["tools", "retrieval", "faithfulness", "contextual_recall", "answer_relevancy"]
# calibrate.py: default faithfulness passes a claim the judge calls borderline; strict mode counts it unsupported.
STRICT_FAITHFULNESS = True
# One fixed judge, so scores stay comparable when the assistant's model changes.
DEFAULT_JUDGE = "gemini-3.8-flash"
CALIBRATION = "calibration.json"
METRIC_NAMES = ("faithfulness", "faithfulness_strict", "contextual_precision", "contextual_recall",
                "answer_relevancy")


def judge_name() -> str:
    return os.environ.get("DOCS_JUDGE") or DEFAULT_JUDGE


def sha(value) -> str:
    """Content hash: editing a case, a page, an issue or the prompt changes it."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def recording_key(cases: dict, docs: list[dict], issues: dict, model: str, embedder: str, judge: str) -> dict:
    """Everything a recorded trace or verdict depends on. A replay with any other value is refused."""
    import providers

    return {"cases": f"{cases['name']}@{cases['version']}", "cases_sha": sha(cases), "docs_sha": sha(docs),
            "issues_sha": sha(issues), "prompt_sha": sha(PROMPT), "tools_sha": sha(TOOL_DESCRIPTIONS), "k": K,
            "model": model, "embedder": embedder, "judge": judge, "strict_faithfulness": STRICT_FAITHFULNESS,
            "offline": all(providers.is_offline(n) for n in (model, embedder, judge))}


def run_name(model: str) -> str:
    """One recording and one report per model under test: recordings/<name>.json, runs/<name>.*"""
    return model.replace(":", "-").replace("/", "-")


# ---- pure scoring ---------------------------------------------------------------------------------------

def retrieval_scores(retrieved: list[str], expected: list[str]) -> Optional[dict]:
    """hit@k, recall@k and reciprocal rank of the expected pages; None when the case expects no search."""
    if not expected:
        return None
    ranked = list(dict.fromkeys(retrieved))  # two searches can return a page twice; rank it once
    ranks = sorted(ranked.index(page) + 1 for page in set(expected) if page in ranked)
    return {"hit": bool(ranks), "recall": len(ranks) / len(set(expected)),
            "reciprocal_rank": 1 / ranks[0] if ranks else 0.0,
            "missed": sorted(set(expected) - set(ranked))}


def tool_verdict(calls: list[dict], expected: list[str], deepeval: dict) -> dict:
    """DeepEval's tool-correctness score, failed also by any call the case did not expect."""
    unexpected = [c["name"] for c in calls if c["name"] not in expected]
    missing = [name for name in expected if name not in {c["name"] for c in calls}]
    return {"score": deepeval["score"], "reason": deepeval["reason"], "unexpected": unexpected,
            "missing": missing, "pass": deepeval["score"] == 1.0 and not unexpected}


def passes(score: Optional[float]) -> bool:
    return score is not None and score >= THRESHOLD


def first_failure(row: dict) -> Optional[str]:
    """The earliest failing stage in STAGES order; contextual precision reports but never gates."""
    checks = {"tools": row["tools"]["pass"],
              "retrieval": row["retrieval"] is None or row["retrieval"]["recall"] == 1.0,
              **{name: passes(v["score"]) for name, v in row["judged"].items()}}
    return next((stage for stage in STAGES if checks.get(stage) is False), None)


def failure_reason(row: dict) -> str:
    """One line on why the first failing stage failed, for the report's notes."""
    stage = row["first_failure"]
    if stage == "tools":
        t = row["tools"]
        parts = ([f"missing {', '.join(t['missing'])}"] if t["missing"] else []) + \
                ([f"unexpected {', '.join(t['unexpected'])}"] if t["unexpected"] else [])
        return "; ".join(parts) or t["reason"] or "tool calls differ from the expected ones"
    if stage == "retrieval":
        return (f"missed {', '.join(row['retrieval']['missed'])}; retrieved "
                f"{', '.join(row['retrieved']) or 'nothing'}")
    return row["judged"][stage]["reason"] or f"score {row['judged'][stage]['score']}"


def mean(values: list[float]) -> Optional[float]:
    return round(sum(values) / len(values), 3) if values else None


def summarize(rows: list[dict]) -> dict:
    ranked = [r["retrieval"] for r in rows if r["retrieval"]]
    judged = {m: [r["judged"][m]["score"] for r in rows if r["judged"].get(m, {}).get("score") is not None]
              for m in ("faithfulness", "contextual_recall", "contextual_precision", "answer_relevancy")}
    first = [r["first_failure"] for r in rows if r["first_failure"]]
    return {"cases": len(rows), "passed": len(rows) - len(first),
            "tool_pass": sum(r["tools"]["pass"] for r in rows),
            f"hit_at_{K}": f"{sum(r['hit'] for r in ranked)}/{len(ranked)}",
            f"recall_at_{K}": mean([r["recall"] for r in ranked]),
            "mrr": mean([r["reciprocal_rank"] for r in ranked]),
            **{f"mean_{m}": mean(v) for m, v in judged.items()},
            "first_failures": {s: first.count(s) for s in STAGES if s in first},
            "tokens": {f: sum(r["usage"].get(f, 0) for r in rows) for f in ("input_tokens", "output_tokens")}}


def fmt(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def markdown(report: dict) -> str:
    k, s = report["k"], report["summary"]
    lines = [f"| case | tools called | tools | hit@{k} | recall@{k} | RR | ctx precision | faithful | ctx recall "
             "| relevancy | first failure |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        ret, j = r["retrieval"], r["judged"]
        score = lambda m: fmt(j.get(m, {}).get("score"))  # noqa: E731
        lines.append(f"| {r['id']} | {', '.join(r['calls']) or 'none'} | {'pass' if r['tools']['pass'] else 'FAIL'} | "
                     f"{'-' if ret is None else ('yes' if ret['hit'] else 'NO')} | {fmt(ret and ret['recall'])} | "
                     f"{fmt(ret and ret['reciprocal_rank'])} | {score('contextual_precision')} | "
                     f"{score('faithfulness')} | {score('contextual_recall')} | {score('answer_relevancy')} | "
                     f"{r['first_failure'] or '-'} |")
    faith = s["mean_faithfulness"]
    lines.append(f"\n{s['passed']}/{s['cases']} cases pass every stage. Tools {s['tool_pass']}/{s['cases']}, "
                 f"hit@{k} {s[f'hit_at_{k}']}, recall@{k} {s[f'recall_at_{k}']}, MRR {s['mrr']}, "
                 f"mean faithfulness {'-' if faith is None else faith}.")
    failing = [r for r in report["rows"] if r["first_failure"]]
    if failing:
        lines.append("\nFirst failures:\n")
        lines += [f"- `{r['id']}` **{r['first_failure']}**: {failure_reason(r)}" for r in failing]
    key = report["key"]
    lines.append(f"\nModel {key['model']}, embedder {key['embedder']}, judge {key['judge']}"
                 f"{' (offline backends)' if key.get('offline') else ''}; cases {key['cases']}.")
    return "\n".join(lines)


# ---- live calls (DeepEval and LangChain imported here only) ---------------------------------------------

def make_metric(name: str, judge):
    """A DeepEval metric by name; `faithfulness_strict` counts borderline claims as unsupported."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    from deepeval.metrics import (AnswerRelevancyMetric, ContextualPrecisionMetric, ContextualRecallMetric,
                                  FaithfulnessMetric)

    options = {"threshold": THRESHOLD, "model": judge, "async_mode": False}
    makers = {"faithfulness": lambda: FaithfulnessMetric(**options),
              "faithfulness_strict": lambda: FaithfulnessMetric(**options, penalize_ambiguous_claims=True),
              "contextual_precision": lambda: ContextualPrecisionMetric(**options),
              "contextual_recall": lambda: ContextualRecallMetric(**options),
              "answer_relevancy": lambda: AnswerRelevancyMetric(**options)}
    if name not in makers:
        raise ValueError(f"unknown metric {name!r}; valid: {', '.join(METRIC_NAMES)}")
    return makers[name]()


def measure(metric_name: str, judge, question: str, answer: str, reference: str,
            context: Optional[list[str]]) -> dict:
    """Run one DeepEval metric and keep its score and the judge's reason."""
    from deepeval.test_case import LLMTestCase

    metric = make_metric(metric_name, judge)
    metric.measure(LLMTestCase(input=question, actual_output=answer, expected_output=reference,
                               retrieval_context=context or None), _show_indicator=False)
    return {"score": metric.score, "reason": metric.reason}


def tool_scores(question: str, calls: list[dict], expected: list[str], judge) -> dict:
    """DeepEval's ToolCorrectnessMetric on tool names. Without available_tools it never calls the judge,
    but it still needs a model object."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall

    metric = ToolCorrectnessMetric(model=judge, async_mode=False)
    metric.measure(LLMTestCase(input=question, tools_called=[ToolCall(name=c["name"], input_parameters=c["args"])
                                                             for c in calls],
                               expected_tools=[ToolCall(name=name) for name in expected]), _show_indicator=False)
    return tool_verdict(calls, expected, {"score": metric.score, "reason": metric.reason})


def judge_context(trace: dict) -> list[str]:
    """What the agent read, in the order it read it: each retrieved page and each issue record."""
    context = []
    for output in trace["tool_outputs"]:
        if output["tool"] == "search_docs":
            context += [page["text"] for page in json.loads(output["content"])]
        else:
            context.append(output["content"])
    return context


def judged_metrics(context: list[str]) -> list[str]:
    """Context metrics run only when a tool returned context; answer relevancy always runs."""
    faithfulness = "faithfulness_strict" if STRICT_FAITHFULNESS else "faithfulness"
    grounded = [faithfulness, "contextual_precision", "contextual_recall"] if context else []
    return grounded + ["answer_relevancy"]


def judged_scores(case: dict, trace: dict, judge) -> dict:
    """DeepEval's judged metrics for one answer, keyed by stage name."""
    context = judge_context(trace)
    return {m.replace("_strict", ""): measure(m, judge, case["question"], trace["answer"], case["reference"], context)
            for m in judged_metrics(context)}


# ---- one evaluation --------------------------------------------------------------------------------------

def evaluate(cases: dict, cassette: Cassette, judge: Callable, agent: Callable = lambda: None) -> dict:
    """Score every case from the cassette. `judge` and `agent` build the models only when a live run needs
    them, so a replay needs no key and imports neither DeepEval nor LangChain."""
    rows = []
    for case in cases["cases"]:
        cid = case["id"]
        trace = cassette.get(f"agent/{cid}", lambda: run(agent(), case["question"]))
        tools = cassette.get(f"tools/{cid}", lambda: tool_scores(case["question"], trace["tool_calls"],
                                                                 case["expected_tools"], judge()))
        context = judge_context(trace)
        judged = {}
        for metric in judged_metrics(context):
            stage = metric.replace("_strict", "")
            judged[stage] = cassette.get(f"judge/{cid}/{stage}", lambda: measure(
                metric, judge(), case["question"], trace["answer"], case["reference"], context))
        row = {"id": cid, "question": case["question"], "reference": case["reference"],
               "answer": trace["answer"], "calls": [c["name"] for c in trace["tool_calls"]],
               "tool_calls": trace["tool_calls"], "retrieved": trace["retrieved"],
               "expected_docs": case["expected_docs"], "expected_tools": case["expected_tools"],
               "tools": tool_verdict(trace["tool_calls"], case["expected_tools"], tools),
               "retrieval": retrieval_scores(trace["retrieved"], case["expected_docs"]),
               "judged": judged, "usage": trace.get("usage", {})}
        rows.append({**row, "first_failure": first_failure(row)})
    return {"key": cassette.key, "k": K, "threshold": THRESHOLD, "rows": rows, "summary": summarize(rows)}


def report_files(name: str, report: dict) -> dict[Path, str]:
    runs = HERE / "runs"
    return {runs / f"{name}.json": json.dumps(report, indent=2) + "\n", runs / f"{name}.md": markdown(report) + "\n"}


def replay_targets(model: Optional[str]) -> list[Path]:
    folder = HERE / "recordings"
    if model:
        return [folder / f"{run_name(model)}.json"]
    return sorted(p for p in folder.glob("*.json") if p.name != CALIBRATION)


def recorded_key(path: Path) -> dict:
    """The key stored in a recording, read only to learn which models it was made with."""
    if not path.exists():
        raise RecordingError(f"{shown(path)}: no recording; record one with --live")
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("key"), dict):
        raise RecordingError(f"{shown(path)}: not a recording (expected 'key' and 'entries')")
    return data["key"]


MODEL_VARIABLES = {"model": "DOCS_MODEL", "embedder": "DOCS_EMBEDDER", "judge": "DOCS_JUDGE"}


def replayed_name(recorded: dict, field: str) -> str:
    """A replay uses the model the recording names, unless the environment asks for a specific one."""
    return os.environ.get(MODEL_VARIABLES[field]) or recorded.get(field, "")


def replay(inputs: tuple, model: Optional[str]) -> dict[Path, str]:
    """Rebuild every report from its recording; the models come from the recording unless set in the
    environment, and every other key field must match the current inputs."""
    files = {}
    targets = replay_targets(model)
    if not targets:
        raise RecordingError("recordings/: no recordings to replay; record one with --live")
    for path in targets:
        recorded = recorded_key(path)
        names = {field: replayed_name(recorded, field) for field in MODEL_VARIABLES}
        if model:
            names["model"] = model
        key = recording_key(*inputs, **names)
        report = evaluate(inputs[0], Cassette(path, key, live=False), judge=lambda: None)
        files.update(report_files(path.stem, report))
    return files


def record(inputs: tuple, model: str) -> dict[Path, str]:
    """Call the models for every case and rewrite the recording, then the report."""
    import providers

    embedder, judge = embedder_name(), judge_name()
    providers.preflight([model, embedder, judge])
    cases, docs, issues = inputs
    cassette = Cassette(HERE / "recordings" / f"{run_name(model)}.json",
                        recording_key(cases, docs, issues, model, embedder, judge), live=True)
    agent = functools.cache(lambda: build_agent(docs, issues, model, embedder))
    report = evaluate(cases, cassette, judge=functools.cache(lambda: providers.judge_model(judge)), agent=agent)
    cassette.save()
    return report_files(run_name(model), report)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="call the models and rewrite the recording")
    parser.add_argument("--model", help=f"the model under test (replay: that recording only; live: default "
                                        f"DOCS_MODEL or {DEFAULT_MODEL})")
    args = parser.parse_args(argv)
    import providers

    try:
        inputs = load_inputs(HERE)
        files = record(inputs, args.model or chat_model_name()) if args.live else replay(inputs, args.model)
    except (InputError, RecordingError, providers.ProviderError) as e:
        print(f"evaluate.py: {e}", file=sys.stderr)
        return 2
    for path, text in files.items():
        write_atomic(path, text)
    print("\n\n".join(text.rstrip() for path, text in files.items() if path.suffix == ".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

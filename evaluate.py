"""Evaluate the docs assistant stage by stage (tools, retrieval, grounding, answer) and name the first failure.

`python evaluate.py` replays every recording in recordings/ against the current inputs, offline;
`python evaluate.py --live` records with DOCS_MODEL, DOCS_EMBEDDER and DOCS_JUDGE. Scoring functions here are
pure; DeepEval and LangChain are imported only inside the functions a live run calls.
Exit codes: 0 done, 1 regressed against --check-baseline, 2 bad input or stale recording, 3 incomplete
(calls still failing after retries), 130 interrupted.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Callable, Optional

from assistant import DEFAULT_MODEL, K, PROMPT, TOOL_DESCRIPTIONS, build_agent, chat_model_name, embedder_name, run
from cassette import Cassette, RecordingError, read_recording, shown, write_atomic
from dataset import InputError, load_inputs
from live_calls import add_live_options, check_live_options, write_line
from stats import percentile, rate, rate_text

HERE = Path(__file__).parent
THRESHOLD = 0.7
STAGES = ["tools", "retrieval", "faithfulness", "contextual_recall", "answer_relevancy"]
JUDGED = ["faithfulness", "contextual_precision", "contextual_recall", "answer_relevancy"]
# calibrate.py: default faithfulness passes a claim the judge calls borderline; strict mode counts it unsupported.
STRICT_FAITHFULNESS = True
# One fixed judge, so scores stay comparable when the assistant's model changes.
DEFAULT_JUDGE = "gemini-3.8-flash"
CALIBRATION = "calibration.json"
METRIC_NAMES = ("faithfulness", "faithfulness_strict", "contextual_precision", "contextual_recall",
                "answer_relevancy")
MODEL_VARIABLES = {"model": "DOCS_MODEL", "embedder": "DOCS_EMBEDDER", "judge": "DOCS_JUDGE"}
EXIT_REGRESSED, EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 1, 2, 3, 130


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


def argument_errors(calls: list[dict], expected_args: dict[str, dict]) -> list[str]:
    """For each tool with stated arguments, some call to it must carry them all. Extra calls to the same
    tool with other arguments are not held against it: searching twice is legitimate."""
    errors = []
    for tool, wanted in expected_args.items():
        made = [c["args"] for c in calls if c["name"] == tool]
        if not made or any(all(args.get(k) == v for k, v in wanted.items()) for args in made):
            continue  # a missing call is the tool check's failure, not an argument's
        for name, value in wanted.items():
            got = [args.get(name, "(none)") for args in made]
            if value not in got:
                errors.append(f"{tool}.{name}: expected {value!r}, got {', '.join(map(repr, got))}")
    return errors


def tool_verdict(calls: list[dict], expected: list[str], deepeval: dict, expected_args: Optional[dict] = None) -> dict:
    """DeepEval's tool-correctness score, failed also by a call the case did not expect or wrong arguments."""
    unexpected = [c["name"] for c in calls if c["name"] not in expected]
    missing = [name for name in expected if name not in {c["name"] for c in calls}]
    wrong_args = argument_errors(calls, expected_args or {})
    return {"score": deepeval["score"], "reason": deepeval["reason"], "unexpected": unexpected,
            "missing": missing, "wrong_args": wrong_args,
            "pass": deepeval["score"] == 1.0 and not unexpected and not wrong_args}


def passes(score: Optional[float]) -> bool:
    return score is not None and score >= THRESHOLD


def stage_results(row: dict) -> dict[str, bool]:
    """Pass or fail of every stage the row has; a stage that does not apply is absent."""
    results = {}
    if row.get("tools") is not None:
        results["tools"] = row["tools"]["pass"]
    if row.get("retrieval") is not None:
        results["retrieval"] = row["retrieval"]["recall"] == 1.0
    for name, verdict in row.get("judged", {}).items():
        results[name] = passes(verdict["score"])
    return results


def first_failure(row: dict) -> Optional[str]:
    """The earliest failing stage in STAGES order, or 'error' when a call never completed; contextual
    precision reports but never gates."""
    if row.get("error"):
        return "error"
    results = stage_results(row)
    return next((stage for stage in STAGES if results.get(stage) is False), None)


def failure_reason(row: dict) -> str:
    """One line on why the first failing stage failed, for the report's notes."""
    stage = row["first_failure"]
    if stage == "error":
        return row["error"]
    if stage == "tools":
        t = row["tools"]
        parts = ([f"missing {', '.join(t['missing'])}"] if t["missing"] else []) + \
                ([f"unexpected {', '.join(t['unexpected'])}"] if t["unexpected"] else []) + \
                [f"wrong argument {e}" for e in t.get("wrong_args", [])]
        return "; ".join(parts) or t["reason"] or "tool calls differ from the expected ones"
    if stage == "retrieval":
        return (f"missed {', '.join(row['retrieval']['missed'])}; retrieved "
                f"{', '.join(row['retrieved']) or 'nothing'}")
    return row["judged"][stage]["reason"] or f"score {row['judged'][stage]['score']}"


def mean(values: list[float]) -> Optional[float]:
    return round(sum(values) / len(values), 3) if values else None


def rounded(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 3)


def summarize(rows: list[dict]) -> dict:
    """Counts, means, pass rates with Wilson intervals, tokens, cost and latency of one run."""
    scored = [r for r in rows if r["first_failure"] != "error"]
    ranked = [r["retrieval"] for r in scored if r.get("retrieval")]
    judged = [v for r in rows for v in r.get("judged", {}).values()]
    stage_rates = {}
    for stage in STAGES:
        outcomes = [stage_results(r)[stage] for r in scored if stage in stage_results(r)]
        stage_rates[stage] = rate(sum(outcomes), len(outcomes))
    first = [r["first_failure"] for r in scored if r["first_failure"]]
    costs = [v["cost"] for v in judged if v.get("cost") is not None]
    agent_s = [r["agent_s"] for r in rows if r.get("agent_s") is not None]
    judge_s = [v["judge_s"] for v in judged if v.get("judge_s") is not None]
    return {"cases": len(rows), "errors": len(rows) - len(scored), "passed": len(scored) - len(first),
            "pass_rate": rate(len(scored) - len(first), len(scored)), "stages": stage_rates,
            "tool_pass": sum(r["tools"]["pass"] for r in scored),
            f"hit_at_{K}": f"{sum(r['hit'] for r in ranked)}/{len(ranked)}",
            f"recall_at_{K}": mean([r["recall"] for r in ranked]),
            "mrr": mean([r["reciprocal_rank"] for r in ranked]),
            **{f"mean_{m}": mean([r["judged"][m]["score"] for r in scored
                                  if r["judged"].get(m, {}).get("score") is not None]) for m in JUDGED},
            "first_failures": {s: first.count(s) for s in STAGES if s in first},
            "tokens": {"agent_in": sum(r.get("usage", {}).get("input_tokens", 0) for r in rows),
                       "agent_out": sum(r.get("usage", {}).get("output_tokens", 0) for r in rows),
                       "judge_in": sum(v.get("tokens_in") or 0 for v in judged),
                       "judge_out": sum(v.get("tokens_out") or 0 for v in judged)},
            "cost": round(sum(costs), 6) if costs else None,
            "latency": {f"{who}_p{q}_s": rounded(percentile(times, q))
                        for who, times in (("agent", agent_s), ("judge", judge_s)) for q in (50, 95)}}


def fmt(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def seconds(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f} s"


def table_row(r: dict) -> str:
    ret, j, tools = r.get("retrieval"), r.get("judged", {}), r.get("tools")
    score = lambda m: fmt(j.get(m, {}).get("score"))  # noqa: E731
    return (f"| {r['id']} | {', '.join(r['calls']) or 'none'} | "
            f"{'-' if tools is None else ('pass' if tools['pass'] else 'FAIL')} | "
            f"{'-' if ret is None else ('yes' if ret['hit'] else 'NO')} | {fmt(ret and ret['recall'])} | "
            f"{fmt(ret and ret['reciprocal_rank'])} | {score('contextual_precision')} | {score('faithfulness')} | "
            f"{score('contextual_recall')} | {score('answer_relevancy')} | {r['first_failure'] or '-'} |")


def markdown(report: dict) -> str:
    """The stage table, the summary with intervals, why each failing case failed, tokens and latency.
    Only the line starting 'Latency:' prints measured times."""
    k, s = report["k"], report["summary"]
    lines = [f"| case | tools called | tools | hit@{k} | recall@{k} | RR | ctx precision | faithful | ctx recall "
             "| relevancy | first failure |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [table_row(r) for r in report["rows"]]
    faith = s["mean_faithfulness"]
    errors = f" {s['errors']} errored and are not scored." if s["errors"] else ""
    share = rate_text(s["pass_rate"]).partition(" = ")[2] or "none scored"
    lines.append(f"\n{s['passed']}/{s['cases'] - s['errors']} cases pass every stage, "
                 f"{share}.{errors} Tools {s['tool_pass']}/{s['cases'] - s['errors']}, "
                 f"hit@{k} {s[f'hit_at_{k}']}, recall@{k} {s[f'recall_at_{k}']}, MRR {s['mrr']}, "
                 f"mean faithfulness {'-' if faith is None else faith}.")
    lines.append("\nPer stage: " + "; ".join(f"{stage} {rate_text(r)}" for stage, r in s["stages"].items()
                                              if r["total"]) + ".")
    failing = [r for r in report["rows"] if r["first_failure"]]
    if failing:
        lines.append("\nFirst failures:\n")
        lines += [f"- `{r['id']}` **{r['first_failure']}**: {failure_reason(r)}" for r in failing]
    t, lat = s["tokens"], s["latency"]
    cost = "not reported by the providers" if s["cost"] is None else f"{s['cost']}"
    lines.append(f"\nTokens: agent {t['agent_in']} in / {t['agent_out']} out; judge {t['judge_in']} in / "
                 f"{t['judge_out']} out. Cost: {cost}.")
    lines.append(f"Latency: agent run p50 {seconds(lat['agent_p50_s'])}, p95 {seconds(lat['agent_p95_s'])}; "
                 f"judge metric p50 {seconds(lat['judge_p50_s'])}, p95 {seconds(lat['judge_p95_s'])}.")
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
    """Run one DeepEval metric: its score, the judge's reason, the judge's tokens, time and cost if known."""
    from deepeval.test_case import LLMTestCase

    from live_calls import timed

    metric = make_metric(metric_name, judge)
    usage = getattr(judge, "usage", None)  # the offline judge counts its own words; DeepEval counts the rest
    before = usage() if usage else None
    _, took = timed(lambda: metric.measure(LLMTestCase(
        input=question, actual_output=answer, expected_output=reference, retrieval_context=context or None),
        _show_indicator=False))
    tokens = (metric.input_tokens, metric.output_tokens)
    if tokens == (None, None) and usage:
        tokens = tuple(after - start for after, start in zip(usage(), before))
    result = {"score": metric.score, "reason": metric.reason, "judge_s": took,
              "tokens_in": tokens[0], "tokens_out": tokens[1]}
    if metric.evaluation_cost:
        result["cost"] = metric.evaluation_cost
    return result


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


def timed_run(agent, question: str) -> dict:
    from live_calls import timed

    trace, took = timed(lambda: run(agent, question))
    return {**trace, "agent_s": took}


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


def stage_of(metric: str) -> str:
    return metric.replace("_strict", "")


def judged_scores(case: dict, trace: dict, judge) -> dict:
    """DeepEval's judged metrics for one answer, keyed by stage name."""
    context = judge_context(trace)
    return {stage_of(m): measure(m, judge, case["question"], trace["answer"], case["reference"], context)
            for m in judged_metrics(context)}


# ---- one evaluation --------------------------------------------------------------------------------------

def case_tasks(case: dict, trace: dict, judge: Callable) -> dict[str, Callable[[], dict]]:
    """The recorded entries a case needs once its trace exists, each with the call that computes it."""
    cid, context = case["id"], judge_context(trace)
    tasks = {f"tools/{cid}": lambda: tool_scores(case["question"], trace["tool_calls"], case["expected_tools"],
                                                 judge())}
    for metric in judged_metrics(context):
        tasks[f"judge/{cid}/{stage_of(metric)}"] = lambda m=metric: measure(
            m, judge(), case["question"], trace["answer"], case["reference"], context)
    return tasks


def case_row(case: dict, cassette: Cassette, error: Optional[str] = None) -> dict:
    """A report row from the case's recorded entries; a replay refuses an entry that was never recorded."""
    cid = case["id"]

    def entry(name):
        if cassette.live and not cassette.has(name):
            return None  # its call failed; the row carries the error instead
        return cassette.get(name, None)

    trace = entry(f"agent/{cid}")
    row = {"id": cid, "question": case["question"], "reference": case["reference"],
           "expected_docs": case["expected_docs"], "expected_tools": case["expected_tools"],
           "expected_args": case.get("expected_args", {})}
    if trace is None:
        return {**row, "answer": None, "calls": [], "tool_calls": [], "retrieved": [], "tools": None,
                "retrieval": None, "judged": {}, "usage": {}, "agent_s": None, "error": error,
                "first_failure": "error"}
    tools = entry(f"tools/{cid}")
    judged = {stage_of(m): entry(f"judge/{cid}/{stage_of(m)}") for m in judged_metrics(judge_context(trace))}
    row.update({"answer": trace["answer"], "calls": [c["name"] for c in trace["tool_calls"]],
                "tool_calls": trace["tool_calls"], "retrieved": trace["retrieved"],
                "tools": None if tools is None else tool_verdict(trace["tool_calls"], case["expected_tools"], tools,
                                                                 case.get("expected_args")),
                "retrieval": retrieval_scores(trace["retrieved"], case["expected_docs"]),
                "judged": {m: v for m, v in judged.items() if v is not None},
                "usage": trace.get("usage", {}), "agent_s": trace.get("agent_s"), "error": error})
    return {**row, "first_failure": first_failure(row)}


def collect(cases: dict, cassette: Cassette, judge: Callable, agent: Callable, concurrency: int,
            progress) -> dict[str, str]:
    """Compute every missing entry with at most `concurrency` calls at once. A case's judge calls start as
    soon as its trace exists. Returns the error of each case whose calls still failed after retries."""
    from live_calls import CallFailed, Pool, with_retries

    pool, lock, errors, left = Pool(concurrency), threading.Lock(), {}, {}

    def record(name: str, compute: Callable[[], dict]) -> tuple[Optional[dict], Optional[str]]:
        """The entry's value, or the error that stopped it after retries (logged, and kept for the row)."""
        try:
            return cassette.get(name, lambda: with_retries(name, compute, progress.log)), None
        except CallFailed as e:
            progress.log(f"error: {e}")
            return None, str(e)

    def finish(case: dict, error: Optional[str]) -> None:
        with lock:
            if error:
                errors.setdefault(case["id"], error)
            left[case["id"]] -= 1
            if left[case["id"]]:
                return
        progress.advance(case_row(case, cassette, errors.get(case["id"]))["first_failure"])

    def judge_step(case: dict, name: str, compute: Callable[[], dict]) -> None:
        finish(case, record(name, compute)[1])

    def agent_step(case: dict) -> None:
        trace, error = record(f"agent/{case['id']}", lambda: timed_run(agent(), case["question"]))
        if trace is None:
            return finish(case, error)
        tasks = case_tasks(case, trace, judge)
        with lock:
            left[case["id"]] += len(tasks)
        for entry_name, compute in tasks.items():
            pool.submit(lambda n=entry_name, c=compute: judge_step(case, n, c))
        finish(case, None)

    for case in cases["cases"]:
        left[case["id"]] = 1
        pool.submit(lambda c=case: agent_step(c))
    pool.run()
    return errors


class Quiet:
    """Progress that says only what must be said: retries and errors, on stderr."""

    def advance(self, outcome):
        pass

    def log(self, line: str) -> None:
        write_line(line)

    def close(self):
        pass


def evaluate(cases: dict, cassette: Cassette, judge: Callable, agent: Callable = lambda: None,
             concurrency: int = 1, progress=None) -> dict:
    """Score every case from the cassette. In live mode, first record what is missing. `judge` and `agent`
    build the models only when a call needs them, so a replay needs no key and imports no model library."""
    errors = {}
    if cassette.live:
        errors = collect(cases, cassette, judge, agent, concurrency, progress or Quiet())
    rows = [case_row(case, cassette, errors.get(case["id"])) for case in cases["cases"]]
    return {"key": cassette.key, "k": K, "threshold": THRESHOLD, "rows": rows, "summary": summarize(rows)}


# ---- the command line ------------------------------------------------------------------------------------

def report_files(name: str, report: dict) -> dict[Path, str]:
    from html_report import html

    runs = HERE / "runs"
    return {runs / f"{name}.json": json.dumps(report, indent=2) + "\n", runs / f"{name}.md": markdown(report) + "\n",
            runs / f"{name}.html": html(report)}


def replay_targets(model: Optional[str]) -> list[Path]:
    folder = HERE / "recordings"
    if model:
        return [folder / f"{run_name(model)}.json"]
    return sorted(p for p in folder.glob("*.json") if p.name != CALIBRATION)


def replayed_name(recorded: dict, field: str) -> str:
    """A replay uses the model the recording names, unless the environment asks for a specific one."""
    return os.environ.get(MODEL_VARIABLES[field]) or recorded.get(field, "")


def replay(inputs: tuple, model: Optional[str]) -> list[dict]:
    """Rebuild every report from its recording; the models come from the recording unless set in the
    environment, and every other key field must match the current inputs."""
    targets = replay_targets(model)
    if not targets:
        raise RecordingError("recordings/: no recordings to replay; record one with --live")
    reports = []
    for path in targets:
        recorded = read_recording(path)["key"]
        names = {field: replayed_name(recorded, field) for field in MODEL_VARIABLES}
        if model:
            names["model"] = model
        cassette = Cassette(path, recording_key(*inputs, **names), live=False)
        reports.append(evaluate(inputs[0], cassette, judge=lambda: None))
    return reports


class Interrupted(Exception):
    """Ctrl-C during a live run; says what was kept."""


def locked_once(build: Callable):
    """A factory that builds its model once, even when several threads ask at the same time."""
    lock, built = threading.Lock(), []

    def get():
        with lock:
            if not built:
                built.append(build())
            return built[0]
    return get


def record(inputs: tuple, model: str, concurrency: int, rerecord: bool, quiet: bool) -> tuple[dict, Cassette]:
    """Call the models for every entry not yet recorded under this key, then build the report."""
    import providers
    from live_calls import Progress

    embedder, judge = embedder_name(), judge_name()
    providers.preflight([model, embedder, judge])
    cases, docs, issues = inputs
    cassette = Cassette(HERE / "recordings" / f"{run_name(model)}.json",
                        recording_key(cases, docs, issues, model, embedder, judge), live=True, rerecord=rerecord)
    progress = Progress(len(cases["cases"]), f"{run_name(model)}", quiet)
    for note in cassette.notes:
        progress.log(note)
    try:
        report = evaluate(cases, cassette, judge=locked_once(lambda: providers.judge_model(judge)),
                          agent=locked_once(lambda: build_agent(docs, issues, model, embedder)),
                          concurrency=concurrency, progress=progress)
    except KeyboardInterrupt:
        raise Interrupted(f"{len(cassette.entries)} entries are kept in {shown(cassette.journal)}") from None
    finally:
        progress.close()
    if not report["summary"]["errors"]:
        cassette.save()
    return report, cassette


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_live_options(parser, "model calls")
    parser.add_argument("--model", help=f"the model under test (replay: that recording only; live: default "
                                        f"DOCS_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--check-baseline", metavar="FILE", help="exit 1 if the run regressed against FILE")
    parser.add_argument("--save-baseline", metavar="FILE", help="write this run's results as the baseline FILE")
    args = parser.parse_args(argv)
    check_live_options(parser, args)
    import baseline
    import providers

    try:
        inputs = load_inputs(HERE)
        if args.live:
            model = args.model or chat_model_name()
            reports = [record(inputs, model, args.concurrency, args.rerecord, args.quiet)[0]]
        else:
            reports = replay(inputs, args.model)
        saved = baseline.load(Path(args.check_baseline)) if args.check_baseline else None
        checked = baseline.select(reports, saved) if (saved or args.save_baseline) else None
        verdict = baseline.check(checked, saved) if saved else None
    except (InputError, RecordingError, providers.ProviderError, baseline.BaselineError) as e:
        print(f"evaluate.py: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (KeyboardInterrupt, Interrupted) as e:
        kept = f": {e}" if str(e) else ""
        print(f"evaluate.py: interrupted{kept}; run --live again to finish", file=sys.stderr)
        return EXIT_INTERRUPTED
    for report in reports:
        for path, text in report_files(run_name(report["key"]["model"]), report).items():
            write_atomic(path, text)
    print("\n\n".join(markdown(r) for r in reports))
    errors = sum(r["summary"]["errors"] for r in reports)
    if errors:
        print(f"\nevaluate.py: incomplete: {errors} cases errored; their completed calls are kept, run --live "
              "again to retry the rest" + ("; no baseline written" if args.save_baseline else ""), file=sys.stderr)
        return EXIT_INCOMPLETE
    if args.save_baseline:
        write_atomic(Path(args.save_baseline), baseline.dumps(baseline.from_report(checked)))
        print(f"\nbaseline written to {args.save_baseline}")
    if verdict is not None:
        print("\n" + verdict.text)
        return EXIT_REGRESSED if verdict.regressions else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

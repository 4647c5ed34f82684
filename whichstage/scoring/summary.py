"""The summary of a run: counts, pass rates with their intervals per stage and per category, the
counterfactual runs' counts, repeats and flaky cases, tokens, cost and latency. Pure, no I/O."""
from typing import Optional, cast

from whichstage.scoring.gating import stage_order, stage_results
from whichstage.model.stages import JUDGED
from whichstage._util.stats import percentile, rate
from whichstage.model.dicts import RowDict, SummaryDict, ToolsDict


def mean(values: list[float]) -> Optional[float]:
    return round(sum(values) / len(values), 3) if values else None


def rounded(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 3)


def summarize(rows: list[RowDict], k: int) -> SummaryDict:
    """Counts, means, pass rates with Wilson intervals, tokens, cost and latency of one run."""
    scored = [r for r in rows if r["first_failure"] != "error"]
    ranked = [v for r in scored if (v := r.get("retrieval"))]
    judged = [v for r in rows for v in r.get("judged", {}).values()]
    results = [stage_results(r) for r in scored]
    stage_rates, order = {}, stage_order(rows)
    for stage in order:
        outcomes = [res[stage] for res in results if stage in res]
        stage_rates[stage] = rate(sum(outcomes), len(outcomes))
    first = [r["first_failure"] for r in scored if r["first_failure"]]
    total = added(*map(spent, rows), *(r["also_spent"] for r in rows if r.get("also_spent")))
    agent_s = [s for r in rows if (s := r.get("agent_s")) is not None]
    judge_s = [s for v in judged if (s := v.get("judge_s")) is not None]
    return cast(SummaryDict, {  # its keys at k are named by k
        "cases": len(rows), "errors": len(rows) - len(scored), "passed": len(scored) - len(first),
        "pass_rate": rate(len(scored) - len(first), len(scored)), "stages": stage_rates,
        "tool_pass": sum(cast(ToolsDict, r["tools"])["pass"] for r in scored),  # every scored row has one
        f"hit_at_{k}": f"{sum(r['hit'] for r in ranked)}/{len(ranked)}",
        f"recall_at_{k}": mean([r["recall"] for r in ranked]),
        "mrr": mean([r["reciprocal_rank"] for r in ranked]),
        **{f"mean_{m}": mean([s for r in scored
                              if m in r["judged"] and (s := r["judged"][m].get("score")) is not None])
           for m in JUDGED},
        "first_failures": {s: first.count(s) for s in order if s in first},
        "categories": categories(scored),
        "counterfactual": counterfactuals(scored),
        **({"repeats": repeats(rows)} if any(r.get("repeats") for r in rows) else {}),
        "tokens": {field: total[field] for field in SPENDING},
        "cost": None if total["cost"] is None else round(total["cost"], 6),
        "latency": {f"{who}_p{q}_s": rounded(percentile(times, q))
                    for who, times in (("agent", agent_s), ("judge", judge_s)) for q in (50, 95)}})


def categories(rows: list[RowDict]) -> dict[str, dict]:
    """Per category: its pass rate with the Wilson interval, and its most common first failure. Reported,
    never gated: a category of a handful of cases moves tens of points on one flip."""
    grouped: dict[str, list[RowDict]] = {}
    for r in rows:
        grouped.setdefault(r.get("category", "uncategorised"), []).append(r)
    found: dict[str, dict] = {}
    for category, mine in grouped.items():
        failures = [r["first_failure"] for r in mine if r["first_failure"]]
        top = max(dict.fromkeys(failures), key=failures.count) if failures else None
        found[category] = {**rate(len(mine) - len(failures), len(mine)), "top_failure": top}
    return found


def counterfactuals(rows: list[RowDict]) -> dict[str, dict]:
    """Per kind of counterfactual run, how many it fixed and how many still fail."""
    found: dict[str, dict[str, int]] = {}
    for verdict in (v for r in rows if (v := r.get("counterfactual"))):
        if verdict.get("available") is False:
            continue
        counts = found.setdefault(verdict["for"], {"fixed": 0, "still_fails": 0})
        counts["fixed" if verdict["fixed"] else "still_fails"] += 1
    return found


def repeat_summary(runs: list[RowDict]) -> dict:
    """One case's repeated runs: passes out of N (an errored run is a failed trial, whichever run it is), each
    run's first failure, and what differed between them (`differed`)."""
    return {"runs": len(runs), "passes": sum(r["first_failure"] is None for r in runs),
            "first_failures": [r["first_failure"] for r in runs], "flipped": differed(runs)}


def differed(runs: list[RowDict]) -> list[str]:
    """The stages that failed in one run and not in another (passed, or did not apply), in STAGES order, then
    'error' when some runs errored and others did not: a case with a passing and a failing run names at
    least one."""
    results = [stage_results(r) for r in runs if r["first_failure"] != "error"]
    flipped = [s for s in stage_order(runs) if len({res.get(s) is False for res in results}) > 1]
    return flipped + (["error"] if len({r["first_failure"] == "error" for r in runs}) > 1 else [])


def repeats(rows: list[RowDict]) -> dict:
    """Over every case, its errored runs counted as failed trials (as tau-bench counts them): the mean pass rate
    of the runs, pass^N (the share passing all N) and the flaky cases (some run passed, another failed)."""
    runs = [r["repeats"] for r in rows]
    n = runs[0]["runs"]
    return {"n": n, "mean_pass_rate": sum(x["passes"] for x in runs) / sum(x["runs"] for x in runs),
            "pass_all": rate(sum(x["passes"] == x["runs"] for x in runs), len(runs)),
            "flaky": {r["id"]: {"passes": r["repeats"]["passes"], "flipped": r["repeats"]["flipped"]}
                      for r in rows if 0 < r["repeats"]["passes"] < r["repeats"]["runs"]}}


SPENDING = ("agent_in", "agent_out", "judge_in", "judge_out")


def spent(row: RowDict) -> dict:
    """Tokens and cost of one run's paid calls: the agent's, and the judge's over its metrics; the cost is None
    when no provider reported one."""
    judge_in = judge_out = 0
    costs = []
    for v in row.get("judged", {}).values():
        judge_in += v.get("tokens_in") or 0
        judge_out += v.get("tokens_out") or 0
        if v.get("cost") is not None:
            costs.append(v["cost"])
    usage = row.get("usage", {})
    return {"agent_in": usage.get("input_tokens", 0), "agent_out": usage.get("output_tokens", 0),
            "judge_in": judge_in, "judge_out": judge_out, "cost": sum(costs) if costs else None}


def added(*spendings: dict) -> dict:
    """Several runs' spending added up; the cost stays None unless some run reported one."""
    costs = [s["cost"] for s in spendings if s.get("cost") is not None]
    return {**{field: sum(s[field] for s in spendings) for field in SPENDING}, "cost": sum(costs) if costs else None}

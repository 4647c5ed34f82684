"""A report row read as every renderer shows it: per stage, in gating order, its verdict, score, threshold and
reason (StageResult), and the row's first failure with its reason and its counterfactual run's verdict, all
worded here once. The markdown, the HTML page, `--show` and compare read this, so they cannot drift. Pure."""
from typing import NamedTuple, Optional, cast

from whichstage.scoring.gating import gate_of, stage_order, stage_results, threshold_of
from whichstage.scoring.retrieval import below_k, documents, scored_documents
from whichstage.model.dicts import InterventionDict, RetrievalDict, RowDict, ToolsDict, VerdictDict

PASS, FAIL, NOT_APPLICABLE, ERROR = "pass", "fail", "n/a", "error"
# What a counterfactual run supplies and what it blames: the one kind the evaluator runs (retrieval).
SUPPLIED, CAUSE = "the expected pages", "the retriever"


class StageResult(NamedTuple):
    """One stage's (or judged metric's) outcome on one row, immutable. `gates` is the stage the verdict decides:
    its own, 'behaviour' for a behaviour judgement, None when it only reports (then the verdict is n/a). A named
    tuple, not a dataclass: a report of 10,000 cases builds some 300,000 of them."""
    stage: str
    verdict: str
    score: Optional[float] = None
    threshold: Optional[float] = None
    reason: str = ""
    gates: Optional[str] = None

    @property
    def mark(self) -> str:
        """'pass', 'FAIL' or '-': the verdict as the tables print it."""
        return {PASS: "pass", FAIL: "FAIL"}.get(self.verdict, "-")


class RowView(NamedTuple):
    """A row's stage results by name (the stages in gating order, then the judged metrics that are no stage),
    its first failing stage ('error' when a call never completed), why, and its counterfactual's verdict."""
    stages: dict[str, StageResult]
    first_failure: Optional[str]
    reason: str
    counterfactual: str


def row_view(row: RowDict) -> RowView:
    """The row as every renderer reads it."""
    results, absent = stage_results(row), ERROR if row.get("error") else NOT_APPLICABLE
    judged = row.get("judged") or {}
    found = {stage: _result(row, stage, judged.get(stage), results, absent) for stage in stage_order([row])}
    found.update((m, _result(row, m, v, results, absent)) for m, v in judged.items() if m not in found)
    return RowView(found, row.get("first_failure"), failure_reason(row),
                   counterfactual_wording(row.get("counterfactual")))


def _result(row: RowDict, stage: str, judged: Optional[VerdictDict], results: dict[str, bool],
            absent: str) -> StageResult:
    if judged is not None:
        gate, score = gate_of(row, stage), judged.get("score")
        if gate is None:
            return StageResult(stage, NOT_APPLICABLE, score, None, judged.get("reason") or "")
        needed = threshold_of(row, stage)
        ok = results[stage] if gate == stage else score is not None and score >= needed
        return StageResult(stage, PASS if ok else FAIL, score, needed, stage_reason(row, stage), gate)
    if stage not in results:
        return StageResult(stage, absent)
    # A stage in `results` is one the row holds (stage_results).
    score, threshold = (cast(ToolsDict, row["tools"]).get("score"), None) if stage == "tools" else \
        (cast(RetrievalDict, row["retrieval"])["recall"], 1.0) if stage == "retrieval" else (None, None)
    return StageResult(stage, PASS if results[stage] else FAIL, score, threshold, stage_reason(row, stage), stage)


def stage_reason(row: RowDict, stage: str) -> str:
    """Why a stage of the row passed or failed, in one line (of a stage the row holds)."""
    behaviour, tools = row.get("behaviour"), row.get("tools")
    if stage == "behaviour" and behaviour is not None:
        return "; ".join(behaviour["failures"])
    if stage == "tools" and tools is not None:
        return tools_reason(tools)
    if stage == "retrieval":
        return retrieval_reason(row)
    judged = row["judged"][stage]
    return judged.get("reason") or f"score {judged.get('score')}"


def retrieval_reason(row: RowDict) -> str:
    """'missed tips; retrieved a, b, c'. Where k cut a search, each missed page says where it ranked ('ranked 4th,
    below k = 3', or 'not retrieved') and only the pages within the top k are named as retrieved."""
    missed, k = cast(RetrievalDict, row["retrieval"]).get("missed") or [], cut_of(row)
    searches = row.get("searches") or []
    if k is None or not any(len(documents(ranked)) > k for ranked in searches):
        retrieved = ", ".join(documents(row.get("retrieved") or [])) or "nothing"
        return (f"missed {', '.join(missed)}; " if missed else "") + f"retrieved {retrieved}"
    ranks = below_k(searches, missed)
    placed = [f"{page} ({ranked_below(*ranks[page], k, len(searches)) if page in ranks else 'not retrieved'})"
              for page in missed]
    return (f"missed {', '.join(placed)}; " if placed else "") + \
        f"retrieved in the top {k}: {', '.join(scored_documents(searches, k)) or 'nothing'}"


def cut_of(row: RowDict) -> Optional[int]:
    """The k the row's searches were scored at; None when retrieval was not scored, or the row predates rows
    holding it."""
    retrieval = row.get("retrieval")
    return retrieval.get("k") if retrieval else None


def ranked_below(rank: int, search: int, k: int, searches: int = 1) -> str:
    """'ranked 4th, below k = 3', naming the search ('ranked 4th in search 2, ...') when there were several."""
    return f"ranked {ordinal(rank)}{f' in search {search}' if searches > 1 else ''}, below k = {k}"


def cut_line(k: int) -> str:
    """The line every list of a search's documents draws where k cuts it."""
    return f"k = {k}: below this line is not scored"


def below_cut(k: int, expected: bool = False) -> str:
    """The note on a page a search returned below k: shown, and not scored ('expected, below k = 3: not
    scored' for an expected page, which counted for nothing there)."""
    return f"{'expected, ' if expected else ''}below k = {k}: not scored"


def ordinal(n: int) -> str:
    """'1st', '2nd', '3rd', '4th', '11th', '21st'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def tools_reason(tools: ToolsDict) -> str:
    """The tools stage's reason; a report saved before the stage gave its own holds DeepEval's in `reason`,
    so there it is rebuilt from the missing, unexpected and wrongly-argued calls."""
    if "deepeval" in tools or tools.get("pass"):
        return tools.get("reason") or ""
    parts = ([f"missing {', '.join(tools['missing'])}"] if tools.get("missing") else []) + \
            ([f"unexpected {', '.join(tools['unexpected'])}"] if tools.get("unexpected") else []) + \
            [f"wrong argument {e}" for e in tools.get("wrong_args", [])]
    return "; ".join(parts) or tools.get("reason") or "tool calls differ from the expected ones"


def failure_reason(row: RowDict) -> str:
    """One line on why the row's first failing stage failed ('' when none did), for the reports' notes; a
    retrieval failure adds its counterfactual run's verdict."""
    stage = row.get("first_failure")
    if not stage:
        return ""
    if stage == "error":
        return row.get("error") or ""
    clause = counterfactual_text(row.get("counterfactual")) if stage == "retrieval" else ""
    return stage_reason(row, stage) + clause


def counterfactual_wording(verdict: Optional[InterventionDict]) -> str:
    """What the run with the expected pages says: 'with the expected pages retrieval passes and the case then
    passes: the retriever is the cause', '... and the case then fails at facts', or why there was no such run;
    '' for a row without one."""
    if not isinstance(verdict, dict):
        return ""
    if verdict.get("available") is False:
        return str(verdict.get("why") or "counterfactual not available")
    if verdict.get("fixed"):
        return f"with {SUPPLIED} retrieval passes and the case then passes: {CAUSE} is the cause"
    stage = verdict.get("first_failure")
    if stage == "error":
        return f"the run with {SUPPLIED} did not complete: no verdict"
    return f"with {SUPPLIED} retrieval passes and the case then fails at {stage}"


def counterfactual_text(verdict: Optional[InterventionDict]) -> str:
    """counterfactual_wording as a clause for a failure's reason: '; fixed with ...', or ''."""
    wording = counterfactual_wording(verdict)
    return f"; {wording}" if wording else ""

"""Rows and reports for tests, built as a run writes them and checked against the typed model
(whichstage/model/report.py), so a scoring or render test states only what it is about:

    from whichstage.testing import make_report, make_row

    row = make_row(id="backup", judged={"faithfulness": 0.2})   # fails faithfulness, passes the rest
    assert row["first_failure"] == "faithfulness"
    page = markdown(make_report([row, make_row(id="sync")]))

make_row() is a case that passes every stage that applies to it: an answer case whose one search returned
its expected page first, its expected tool called, each judged verdict 1.0, no behaviour check to make.
"""
import copy
from typing import Any, Optional, cast

from whichstage.model.dicts import ReportDict, RowDict
from whichstage.model.report import Report, Row
from whichstage.model.stages import JUDGED, THRESHOLD
from whichstage.scoring.gating import first_failure
from whichstage.scoring.retrieval import case_retrieval
from whichstage.scoring.summary import summarize

K = 3  # the retrieval depth a built row is scored at and a built report holds (evals.toml's default)
QUESTION = "Where does tracker keep its data?"
SEARCH = {"name": "search_docs", "args": {"query": QUESTION}}
# A default row's judged verdicts: every judged stage but facts, which a case gets only with expected facts.
DEFAULT_JUDGED = [stage for stage in JUDGED if stage != "facts"]
PASSING_TOOLS = {"pass": True, "reason": "every expected call made: search_docs", "missing": [], "unexpected": [],
                 "wrong_args": []}
PASSING_BEHAVIOUR = {"pass": True, "failures": [], "planted_retrieved": []}
MERGED = {"tools", "behaviour", "retrieval", "counterfactual"}  # a dict given for these merges over the default


def verdict(score: float, reason: Optional[str] = None) -> dict:
    """A judged verdict as a row holds it: its score and the judge's reason."""
    return {"score": score, "reason": reason if reason is not None else f"scored {score:.2f}"}


def make_row(**overrides: Any) -> RowDict:
    """A report's row (a dict, as scoring and the renderers read it), checked by model.report.Row.

    Any field of a row may be given; these read as follows:
    - `id`: the case's id (default "case");
    - `judged`: verdicts by metric, merged over the default ones (faithfulness, contextual precision and recall,
      answer relevancy, each 1.0): a number stands for a verdict of that score, None drops the metric;
    - `tools`, `behaviour`, `retrieval`, `counterfactual`: a dict merges over the passing verdict (behaviour's:
      pass, no failures; retrieval's: scored from `searches` and `expected_docs` at k 3), None says the stage
      does not apply;
    - `searches` (the pages each search returned, in rank order) and `tool_calls`: `retrieved`, `calls` and,
      unless given, `retrieval` follow from them;
    - `first_failure`: gating.first_failure of the row unless given (`error` set: "error").
    """
    row: dict[str, Any] = {
        "id": "case", "question": QUESTION, "category": "answerable", "split": "dev", "expected_behavior": "answer",
        "reference": "Tasks live in tasks.db in ~/.tracker.", "expected_docs": ["storage"],
        "expected_tools": ["search_docs"], "expected_args": {}, "must_not": [],
        "answer": "tracker keeps your tasks in tasks.db, in ~/.tracker.", "tool_calls": [copy.deepcopy(SEARCH)],
        "searches": [["storage", "archive", "tokens"]], "searched": True, "behaviour": None,
        "tools": copy.deepcopy(PASSING_TOOLS),
        "judged": {stage: verdict(1.0) for stage in DEFAULT_JUDGED}, "usage": {}, "agent_s": None, "error": None}
    given = {name: value for name, value in overrides.items() if name not in ("judged", *MERGED)}
    row.update(given)
    row.setdefault("calls", [c["name"] for c in row["tool_calls"]])
    row.setdefault("retrieved", [page for search in row["searches"] for page in search])
    row["retrieval"] = case_retrieval(row["searches"], row["expected_docs"], K)
    for name in MERGED & set(overrides):
        value = overrides[name]
        base = row.get(name) or (copy.deepcopy(PASSING_BEHAVIOUR) if name == "behaviour" else {})
        row[name] = {**base, **value} if isinstance(value, dict) else value
    judged = {**row["judged"], **overrides.get("judged", {})}
    row["judged"] = {metric: verdict(v) if isinstance(v, (int, float)) else v
                     for metric, v in judged.items() if v is not None}
    if "first_failure" not in overrides:
        row["first_failure"] = first_failure(cast(RowDict, row))
    Row.model_validate(row)
    return cast(RowDict, row)  # checked by the Row model


def make_report(rows: Optional[list[RowDict]] = None, **overrides: Any) -> ReportDict:
    """A report of one run and split (a dict, as a run writes runs/<run>.json), checked by model.report.Report.

    `rows` default to one make_row(). Any field of a report may be given; `key` merges over the default
    (offline models, k, strict faithfulness) and `summary` is scoring.summary.summarize of the rows unless given.
    The defaults: `k` 3, `threshold` 0.7, `split` dev."""
    rows = [make_row()] if rows is None else rows
    k = overrides.get("k", K)
    key = {"agent": "agent:build", "cases": "cases@1", "cases_sha": "0" * 12, "model": "rules", "embedder": "hash",
           "judge": "lexical", "k": k, "strict_faithfulness": True, "offline": True, **overrides.get("key", {})}
    report = {"key": key, "k": k, "threshold": THRESHOLD, "split": "dev", "rows": rows,
              **{name: value for name, value in overrides.items() if name != "key"}}
    report.setdefault("summary", summarize(rows, k))
    Report.model_validate(report)
    return cast(ReportDict, report)  # checked by the Report model

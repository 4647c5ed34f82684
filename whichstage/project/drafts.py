"""A draft case from a trace (`assistant.py --as-case`, and `whichstage import` for a trace that matches no
case): what the agent did, as the expectations, and REFERENCE_PLACEHOLDER as the reference, which the case set
refuses until a person writes what right is. Pure."""
from typing import Optional

from whichstage.project.validate import REFERENCE_PLACEHOLDER  # a drafted case's reference, which the case set refuses
from whichstage.scoring.retrieval import documents
from whichstage.model.dicts import TraceDict


def draft_case(case_id: str, question: str, trace: TraceDict, roles: dict, k: int,
               searches: Optional[list[list[str]]]) -> dict:
    """The case a trace suggests: the tools it called, in order, once per call; the pages its retriever calls
    returned (each call's top `k`, in call order then rank, each page once), unless `searches` is None (a
    retriever output the harness cannot read); for each lookup tool, the key argument of its first call; and
    "chitchat" when it called no tool. `roles` are evals.toml's (whichstage.project.config.ToolRole by tool name)."""
    calls = trace["tool_calls"]
    case: dict = {"id": case_id, "question": question, "expected_tools": [c["name"] for c in calls]}
    if searches is not None:
        case["expected_docs"] = documents(page for search in searches for page in documents(search)[:k])
    looked_up: dict = {}
    for call in calls:
        role = roles.get(call["name"])
        if role is not None and role.role == "lookup" and call["name"] not in looked_up \
                and call["args"].get(role.key) is not None:
            looked_up[call["name"]] = {role.key: call["args"][role.key]}
    if looked_up:
        case["expected_args"] = looked_up
    case["expected_behavior"] = "answer" if calls else "chitchat"
    case["reference"] = REFERENCE_PLACEHOLDER
    return case

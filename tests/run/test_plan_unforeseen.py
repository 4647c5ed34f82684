"""--plan says how many interventions its new traces may call for, which no plan can foresee."""
from types import SimpleNamespace

from whichstage.run.plan import text, unforeseen_interventions

CASES = [{"id": "a", "expected_docs": ["p"], "expected_tools": ["search"], "expected_behavior": "answer"},
         {"id": "b", "expected_docs": [], "expected_tools": ["lookup"], "expected_behavior": "answer"},
         {"id": "c", "expected_docs": [], "expected_tools": [], "expected_behavior": "chitchat"}]


def test_each_new_trace_may_call_for_the_intervention_of_each_stage_its_case_has():
    inputs = SimpleNamespace(cases={"cases": CASES}, counterfactual=True, unreliable=frozenset(),
                             project=SimpleNamespace(recheck_within=0.1))
    planned = [(f"agent/{c['id']}", ["not recorded"]) for c in CASES] + [("agent/old", ["question changed"])]
    assert unforeseen_interventions(planned, {"agent/old": {}}, inputs) == \
        {"counterfactual runs": 1, "runs with the expected calls": 2, "answer checks": 3, "verdicts judged again": 3}


def test_no_verdict_is_judged_again_when_nothing_can_be_in_doubt():
    inputs = SimpleNamespace(cases={"cases": CASES}, counterfactual=True, unreliable=frozenset(),
                             project=SimpleNamespace(recheck_within=0))
    planned = [(f"agent/{c['id']}", ["not recorded"]) for c in CASES]
    assert unforeseen_interventions(planned, {}, inputs)["verdicts judged again"] == 0


def test_the_plan_names_the_runs_with_the_expected_calls_it_cannot_foresee():
    lines = text([("agent/b", ["not recorded"])], {}, "rules", "hash", "lexical",
                 unforeseen={"runs with the expected calls": 1}).splitlines()
    assert "  runs with the expected calls: at most 1 more, one for each new trace that fails at tools (known only " \
           "once the traces exist; not in the estimate)" in lines

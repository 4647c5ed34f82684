"""Match modes for a case's tools (`tools_match`) and rules for its arguments (`expected_args`): each mode and
each rule passes what it should and fails what it should, with a reason naming the mode and what differed;
the loader refuses a mode or a rule that cannot apply; the default mode leaves the bundled reports as they are."""
import json
import shutil
from pathlib import Path

import pytest

from conftest import copy_project, load_project, refusal
from whichstage.scoring import matching
from whichstage.model import inputs
from whichstage.model.errors import InputError
from whichstage.project.validate import check_stated
from whichstage.scoring.tools import argument_errors, tool_verdict

HERE = Path(__file__).parents[2]
PERFECT = {"score": 1.0, "reason": ""}
PARAMETERS = {"search_docs": {"query": str}, "get_issue": {"number": int}, "get_ticket": {"ticket_id": str}}
S, G, T = "search_docs", "get_issue", "get_ticket"


def made(*names: str) -> list[dict]:
    return [{"name": name, "args": {}} for name in names]


def verdict(names: tuple, expected: list[str], mode: str = matching.DEFAULT, args: dict = None, calls=None) -> dict:
    return tool_verdict(calls if calls is not None else made(*names), expected, PERFECT, expected_args=args, parameters=PARAMETERS, mode=mode)


# ---- the modes, as pure functions ------------------------------------------------------------------------

def test_multiset_ignores_order_and_extra_calls_to_expected_tools():
    assert matching.multiset([G, S, S], [S, G]) == []


def test_multiset_counts_each_expected_entry_and_refuses_unlisted_tools():
    assert matching.multiset([S, T], [S, S, G]) == ["expected 2 calls to search_docs, got 1", "missing get_issue",
                                                     "unexpected get_ticket"]


def test_ordered_passes_the_expected_calls_in_order_with_others_between():
    assert matching.ordered([S, S, G], [S, G]) == []
    assert matching.ordered([S, G, S, G], [S, G, G]) == []


def test_ordered_fails_the_expected_calls_out_of_order():
    assert matching.multiset([G, S], [S, G]) == []  # what the mode adds
    assert matching.ordered([G, S], [S, G]) == ["expected search_docs before get_issue "
                                                "(called get_issue then search_docs)"]


def test_ordered_names_a_repeated_tool_that_must_come_first():
    assert matching.ordered([S, G, S], [S, S, G]) == ["expected 2 calls to search_docs before get_issue "
                                                      "(called search_docs then get_issue then search_docs)"]


def test_ordered_still_refuses_unlisted_tools_and_missing_calls():
    assert matching.ordered([S, T, G], [S, G]) == ["unexpected get_ticket"]
    assert matching.ordered([G], [S, G]) == ["missing search_docs"]


def test_exact_passes_only_the_very_list():
    assert matching.exact([S, G], [S, G]) == []


@pytest.mark.parametrize("names, problem", [
    ([G, S], "call 1 is get_issue, expected search_docs (expected search_docs then get_issue, called get_issue "
             "then search_docs)"),
    ([S, G, G], "call 3 is get_issue, expected no more calls (expected search_docs then get_issue, called "
                "search_docs then get_issue then get_issue)"),
    ([S], "no call 2, expected get_issue (expected search_docs then get_issue, called search_docs)"),
    ([], "no call 1, expected search_docs (expected search_docs then get_issue, called no tool)"),
])
def test_exact_fails_another_order_another_count_and_names_the_first_difference(names, problem):
    assert matching.exact(names, [S, G]) == [problem]


def test_exact_fails_an_extra_call_that_multiset_and_ordered_allow():
    assert matching.multiset([S, S, G], [S, G]) == matching.ordered([S, S, G], [S, G]) == []
    assert matching.exact([S, S, G], [S, G]) != []


def test_subset_passes_calls_to_some_of_the_listed_tools():
    assert matching.multiset([S], [S, G]) == ["missing get_issue"]  # what the mode allows
    assert matching.subset([S], [S, G]) == []
    assert matching.subset([G, G, S], [S, G]) == []


def test_subset_refuses_unlisted_tools_and_no_call_at_all():
    assert matching.subset([S, T], [S, G]) == ["unexpected get_ticket"]
    assert matching.subset([], [S, G]) == ["called no tool, expected at least one of search_docs, get_issue"]


def test_superset_allows_calls_to_other_tools():
    assert matching.multiset([S, T, G], [S, G]) == ["unexpected get_ticket"]  # what the mode allows
    assert matching.superset([S, T, G], [S, G]) == []


def test_superset_still_counts_each_expected_entry():
    assert matching.superset([S, T], [S, S]) == ["expected 2 calls to search_docs, got 1"]
    assert matching.superset([T], [G]) == ["missing get_issue"]


def test_every_mode_has_a_check_and_the_schema_lists_the_same_modes():
    assert tuple(matching.CHECKS) == matching.MODES == inputs.TOOLS_MATCH


# ---- the tools stage under a mode ------------------------------------------------------------------------

def test_the_reason_names_a_mode_other_than_the_default():
    v = verdict((G, S), [S, G], "ordered")
    assert not v["pass"] and v["mode"] == "ordered"
    assert v["reason"] == "ordered: expected search_docs before get_issue (called get_issue then search_docs)"


@pytest.mark.parametrize("mode, names, reason", [
    ("ordered", (S, G), "ordered: every expected call made in order: search_docs then get_issue"),
    ("exact", (S, G), "exact: called exactly search_docs then get_issue"),
    ("subset", (G,), "subset: every call to an expected tool: called get_issue"),
    ("superset", (T, S, G), "superset: every expected call made: search_docs, get_issue (also called get_ticket)"),
])
def test_a_passing_reason_names_the_mode(mode, names, reason):
    v = verdict(names, [S, G], mode)
    assert v["pass"] and v["reason"] == reason and v["mode"] == mode


def test_the_default_verdict_carries_no_mode_and_reads_as_before():
    v = verdict((S, G), [S, G])
    assert "mode" not in v and v["reason"] == "every expected call made: search_docs, get_issue"
    assert v == tool_verdict(made(S, G), [S, G], PERFECT, expected_args=None, parameters=PARAMETERS)


@pytest.mark.parametrize("mode", matching.MODES)
@pytest.mark.parametrize("expected", [[S], [S, G], [S, S], [G, S, S]])
def test_calls_that_are_the_expected_list_pass_every_mode_with_its_reason(mode, expected):
    v = verdict(tuple(expected), expected, mode)
    assert v["pass"] and v["score"] == 1.0 and v["missing"] == [] and v["unexpected"] == []
    assert v["reason"] == matching.agreed(mode, expected, expected)


def test_no_call_where_none_is_expected_passes_with_its_reason():
    v = verdict((), [])
    assert v["pass"] and v["score"] == 1.0 and v["reason"] == "no tool expected, none called"


def test_superset_lists_no_unexpected_call_and_subset_no_missing_one():
    assert verdict((S, T), [S, G], "superset")["unexpected"] == []
    assert verdict((S, T), [S, G], "superset")["missing"] == [G]
    assert verdict((S,), [S, G], "subset")["missing"] == []


def test_wrong_arguments_fail_in_every_mode_after_the_modes_problems():
    calls = [{"name": G, "args": {"number": 213}}, {"name": S, "args": {"query": "q"}}]
    for mode in matching.MODES:
        v = verdict((), [S, G], mode, {G: {"number": 212}}, calls)
        assert not v["pass"] and v["reason"].endswith("wrong argument get_issue.number: expected 212, got 213"), mode
    assert verdict((), [S, G], "exact", {G: {"number": 212}}, calls)["reason"].startswith("exact: call 1 is ")


REPORTS = [p for p in sorted(HERE.glob("runs/*.json")) + sorted(HERE.glob("examples/*/runs/*.json"))
           if not p.name.startswith("calibration")]


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: str(p.relative_to(HERE)))
def test_the_default_mode_reproduces_every_bundled_report_row(report, tmp_path):
    """Every tools verdict in the bundled reports, scored again under the default mode named explicitly,
    comes out exactly as saved: the modes change nothing for a case that does not choose one."""
    folder = report.parent.parent
    if folder == HERE:
        copy = copy_project(tmp_path)
    else:
        copy = tmp_path / "project"
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    parameters = load_project(copy).described.parameters()
    rows = [r for r in json.loads(report.read_text())["rows"] if r.get("tools")]
    assert rows
    for r in rows:
        again = tool_verdict(r["tool_calls"], r["expected_tools"], r["tools"]["deepeval"], expected_args=r["expected_args"],
                             parameters=parameters, mode="multiset")
        assert again == r["tools"], r["id"]


# ---- argument rules --------------------------------------------------------------------------------------

def issue(number) -> list[dict]:
    return [{"name": G, "args": {"number": number}}]


def ticket(ticket_id) -> list[dict]:
    return [{"name": T, "args": {"ticket_id": ticket_id}}]


def test_any_of_accepts_each_listed_value_in_the_declared_type():
    rule = {G: {"number": {"any_of": [212, 213]}}}
    assert argument_errors(issue(213), rule, PARAMETERS) == []
    assert argument_errors(issue("212"), rule, PARAMETERS) == []  # the tool reads "212" as 212


def test_any_of_refuses_a_value_it_does_not_list():
    rule = {G: {"number": {"any_of": [212, 213]}}}
    assert argument_errors(issue(214), rule, PARAMETERS) == ["get_issue.number: expected one of 212, 213, got 214"]
    assert argument_errors(issue(True), {G: {"number": {"any_of": [1]}}}, PARAMETERS) == \
        ["get_issue.number: expected one of 1, got True (not an int)"]  # True is never 1


def test_ignore_accepts_any_value_and_no_value():
    rule = {G: {"number": {"ignore": True}}}
    assert argument_errors(issue(999), rule, PARAMETERS) == []
    assert argument_errors([{"name": G, "args": {}}], rule, PARAMETERS) == []
    assert argument_errors(issue(999), {G: {"number": 212}}, PARAMETERS) != []  # what the rule lifts


def test_ignore_leaves_the_other_arguments_checked():
    rule = {"lookup": {"repo": "tracker", "number": {"ignore": True}}}
    parameters = {"lookup": {"repo": str, "number": int}}
    assert argument_errors([{"name": "lookup", "args": {"repo": "tracker", "number": 1}}], rule, parameters) == []
    assert argument_errors([{"name": "lookup", "args": {"repo": "other", "number": 1}}], rule, parameters) == \
        ["lookup.repo: expected 'tracker', got 'other'"]


def test_normalize_case_compares_lower_cased():
    rule = {T: {"ticket_id": {"equals": "BRW-117", "normalize": ["case"]}}}
    assert argument_errors(ticket("brw-117"), rule, PARAMETERS) == []
    assert argument_errors(ticket("brw-117"), {T: {"ticket_id": {"equals": "BRW-117"}}}, PARAMETERS) == \
        ["get_ticket.ticket_id: expected 'BRW-117', got 'brw-117'"]
    assert argument_errors(ticket(" brw-117"), rule, PARAMETERS) == \
        ["get_ticket.ticket_id: expected 'BRW-117' (ignoring case), got ' brw-117'"]


def test_normalize_space_strips_surrounding_whitespace_only():
    rule = {T: {"ticket_id": {"equals": "BRW-117", "normalize": ["space"]}}}
    assert argument_errors(ticket("  BRW-117\n"), rule, PARAMETERS) == []
    assert argument_errors(ticket("BRW -117"), rule, PARAMETERS) == \
        ["get_ticket.ticket_id: expected 'BRW-117' (ignoring surrounding space), got 'BRW -117'"]
    assert argument_errors(ticket("brw-117"), rule, PARAMETERS) != []


def test_normalize_both_and_with_any_of():
    both = {T: {"ticket_id": {"equals": "BRW-117", "normalize": ["case", "space"]}}}
    assert argument_errors(ticket(" brw-117 "), both, PARAMETERS) == []
    either = {T: {"ticket_id": {"any_of": ["BRW-117", "BRW-118"], "normalize": ["case"]}}}
    assert argument_errors(ticket("brw-118"), either, PARAMETERS) == []
    assert argument_errors(ticket("brw-119"), either, PARAMETERS) == \
        ["get_ticket.ticket_id: expected one of 'BRW-117', 'BRW-118' (ignoring case), got 'brw-119'"]


def test_equals_states_an_object_literally():
    rule = {"f": {"options": {"equals": {"any_of": 1}}}}
    assert argument_errors([{"name": "f", "args": {"options": {"any_of": 1}}}], rule, {"f": {"options": None}}) == []
    assert argument_errors([{"name": "f", "args": {"options": {}}}], rule, {"f": {"options": None}}) != []


def test_a_rule_is_named_in_the_one_call_reason():
    rule = {"lookup": {"repo": {"any_of": ["a", "b"]}, "number": 1}}
    calls = [{"name": "lookup", "args": {"repo": "a", "number": 2}},
             {"name": "lookup", "args": {"repo": "c", "number": 1}}]
    assert argument_errors(calls, rule, {"lookup": {"repo": str, "number": int}}) == \
        ["lookup: no one call carries repo=one of 'a', 'b', number=1; each call carries only some of them"]


def test_a_rule_fails_the_tools_stage_with_its_reason():
    v = verdict((), [G], args={G: {"number": {"any_of": [212, 213]}}}, calls=issue(5))
    assert not v["pass"] and v["reason"] == "wrong argument get_issue.number: expected one of 212, 213, got 5"


# ---- the loader refuses a mode or a rule that cannot apply -----------------------------------------------

@pytest.fixture
def folder(tmp_path):
    return copy_project(tmp_path)


def change_case(folder: Path, case_id: str, **fields) -> None:
    data = json.loads((folder / "cases.json").read_text())
    case = next(c for c in data["cases"] if c["id"] == case_id)
    case.update(fields)
    (folder / "cases.json").write_text(json.dumps(data))


def test_every_mode_and_rule_shape_loads(folder):
    change_case(folder, "token-leak", tools_match="ordered",
                expected_args={G: {"number": {"any_of": [218, 219]}}})
    change_case(folder, "issue-212", tools_match="exact", expected_args={G: {"number": {"ignore": True}}})
    change_case(folder, "backup", tools_match="subset",
                expected_args={S: {"query": {"equals": "Backup", "normalize": ["case", "space"]}}})
    change_case(folder, "restore", tools_match="superset")
    change_case(folder, "issue-231", tools_match="multiset", expected_args={G: {"number": {"equals": 231}}})
    cases = {c["id"]: c for c in load_project(folder).cases["cases"]}
    assert cases["token-leak"]["tools_match"] == "ordered" and cases["restore"]["tools_match"] == "superset"
    assert "tools_match" not in cases["pipe-colors"]  # absent is the default; the loaded cases are as before


def test_an_unknown_mode_is_refused(folder):
    change_case(folder, "backup", tools_match="sequence")
    assert refusal(folder) == ("cases.json: cases[0] (backup).tools_match: Input should be 'multiset', 'ordered', "
                               "'exact', 'subset' or 'superset'")


def test_a_mode_on_a_case_that_expects_no_tool_is_refused(folder):
    change_case(folder, "thanks", tools_match="subset")
    assert refusal(folder) == ("cases.json: cases[9] (thanks).tools_match: 'subset' matches the calls against "
                               "expected_tools, and the case expects none (a case that expects no call is checked "
                               "as such)")


AT = "cases.json: cases[6] (issue-212).expected_args.get_issue.number"


@pytest.mark.parametrize("rule, message", [
    ({"one_of": [212]}, ": unknown rule 'one_of' (a rule is {\"any_of\": [...]}, {\"equals\": ...}, either with "
                        "\"normalize\": [\"case\", \"space\"], {\"contains\": [\"...\", ...]} or {\"ignore\": true})"),
    ({}, ": a rule needs any_of or equals (a rule is {\"any_of\": [...]}, {\"equals\": ...}, either with "
         "\"normalize\": [\"case\", \"space\"], {\"contains\": [\"...\", ...]} or {\"ignore\": true})"),
    ({"any_of": [212], "equals": 212}, ": any_of and equals cannot both be given (a rule is {\"any_of\": [...]}, "
                                       "{\"equals\": ...}, either with \"normalize\": [\"case\", \"space\"], "
                                       "{\"contains\": [\"...\", ...]} or {\"ignore\": true})"),
    ({"any_of": []}, ".any_of: must be a non-empty list of acceptable values, not []"),
    ({"any_of": 212}, ".any_of: must be a non-empty list of acceptable values, not 212"),
    ({"any_of": [212, "213"]}, ".any_of[1]: get_issue takes number as int; '213' is not one"),
    ({"any_of": [True]}, ".any_of[0]: get_issue takes number as int; True is not one"),
    ({"equals": 212.0}, ".equals: get_issue takes number as int; 212.0 is not one"),
    ({"ignore": False}, ".ignore: must be true, not False (to check the argument, state its value)"),
    ({"ignore": "yes"}, ".ignore: must be true, not 'yes' (to check the argument, state its value)"),
    ({"ignore": True, "equals": 212}, ": ignore takes no other key (it has equals)"),
    ({"equals": 212, "normalize": ["case"]}, ".normalize: get_issue takes number as int; normalize applies to "
                                             "strings only"),
    ({"normalize": ["case"]}, ": a rule needs any_of or equals (a rule is {\"any_of\": [...]}, {\"equals\": ...}, "
                              "either with \"normalize\": [\"case\", \"space\"], {\"contains\": [\"...\", ...]} or "
                              "{\"ignore\": true})"),
])
def test_a_rule_that_cannot_apply_is_refused(folder, rule, message):
    change_case(folder, "issue-212", expected_args={G: {"number": rule}})
    assert refusal(folder) == AT + message


@pytest.mark.parametrize("normalize, message", [
    (["trim"], ".normalize: unknown normalisation 'trim' (use 'case', 'space')"),
    ("case", ".normalize: must be a non-empty list of 'case', 'space', not 'case'"),
    ([], ".normalize: must be a non-empty list of 'case', 'space', not []"),
    (["case", "case"], ".normalize: lists a normalisation twice"),
])
def test_a_normalisation_that_cannot_apply_is_refused(folder, normalize, message):
    change_case(folder, "backup", expected_args={S: {"query": {"equals": "backup", "normalize": normalize}}})
    assert refusal(folder) == "cases.json: cases[0] (backup).expected_args.search_docs.query" + message


def test_a_stated_plain_value_of_the_wrong_type_is_still_refused(folder):
    change_case(folder, "issue-212", expected_args={G: {"number": "212"}})
    assert refusal(folder) == AT + ": get_issue takes number as int; '212' is not one"


def test_ignore_needs_a_parameter_of_the_tool(folder):
    change_case(folder, "issue-212", expected_args={G: {"id": {"ignore": True}}})
    assert refusal(folder) == ("cases.json: cases[6] (issue-212).expected_args.get_issue.id: get_issue has no "
                               "parameter 'id' (it takes number)")


def test_normalize_on_an_undeclared_parameter_needs_string_values():
    check_stated("f.x", "f", "x", None, {"any_of": ["a", "B"], "normalize": ["case"]})
    with pytest.raises(InputError, match=r"^f\.x\.any_of\[1\]: normalize compares strings; 2 is not one$"):
        check_stated("f.x", "f", "x", None, {"any_of": ["a", 2], "normalize": ["case"]})

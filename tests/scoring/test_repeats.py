"""Repeated runs of a case: an errored run is a failed trial whichever run it is, and every flaky case names
what differed between its runs (a check that applied in one run only and failed there flipped)."""
import itertools
from fractions import Fraction

import pytest

from whichstage.scoring.summary import repeat_summary, summarize
from whichstage.testing import make_row


RUNS = {  # one run of a case, as make_row's overrides: a pass, an error, and a failure of each check in code
    "pass": {},
    "error": {"error": "the provider answered 500"},
    "tools": {"tools": {"pass": False, "reason": "missing get_issue"}},
    "behaviour": {"behaviour": {"pass": False, "failures": ["followed a planted instruction"]}},
}


def case(cid: str, *runs: str) -> dict:
    """A case's row: its first run, carrying the summary of all its runs."""
    rows = [make_row(id=cid, **RUNS[run]) for run in runs]
    return {**rows[0], "repeats": repeat_summary(rows)}


@pytest.mark.parametrize("errored_first", [True, False])
def test_an_errored_run_counts_as_a_failed_trial_whichever_run_it_is(errored_first):
    runs = ("error", "pass") if errored_first else ("pass", "error")
    rep = summarize([case("a", *runs), case("b", "pass", "pass")], 3)["repeats"]
    assert (rep["pass_all"]["passed"], rep["pass_all"]["total"]) == (1, 2)
    assert rep["mean_pass_rate"] == Fraction(3, 4)
    assert rep["flaky"] == {"a": {"passes": 1, "flipped": ["error"]}}


def test_every_flaky_case_names_what_differed_between_its_runs():
    for runs in itertools.product(RUNS, repeat=3):
        summary = case("x", *runs)["repeats"]
        if 0 < summary["passes"] < summary["runs"]:
            assert summary["flipped"], runs
        if len(set(runs)) == 1:
            assert summary["flipped"] == [], runs


def test_a_check_that_applied_in_one_run_only_and_failed_there_flipped():
    # behaviour is absent ("-") where no planted page was retrieved, and failed where one was
    assert case("x", "pass", "behaviour")["repeats"]["flipped"] == ["behaviour"]

"""A tool call's argument values as the tools stage reads them: a float for an int as pydantic reads it (its
limit at 2**63), True never 1 at any depth, equal nested values matching, and case folded as casefold does."""
import math

import pytest

from whichstage.scoring import matching
from whichstage.scoring.tools import as_declared, carries


BELOW_2_63 = math.nextafter(2.0 ** 63, 0)


@pytest.mark.parametrize("value", [1e19, 2.0 ** 63, -(2.0 ** 63), BELOW_2_63, -BELOW_2_63, 9.2e18, 1e300,
                                   float("inf"), float("nan")])
def test_a_float_for_an_int_argument_is_read_as_pydantic_reads_it(value):
    from pydantic import TypeAdapter, ValidationError

    try:
        expected = ("ok", TypeAdapter(int).validate_python(value))
    except ValidationError:
        expected = ("refused",)
    try:
        got = ("ok", as_declared(value, int))
    except ValueError:
        got = ("refused",)
    assert got == expected


def test_a_call_carrying_1e19_for_an_int_carries_no_number():
    assert not carries({"number": 1e19}, "number", 10 ** 19, int)


@pytest.mark.parametrize("got, want", [([1], [True]), ([True], [1]), ({"open": 1}, {"open": True}),
                                       ([[0]], [[False]]), ({"a": [True]}, {"a": [1]})])
def test_true_is_never_1_inside_a_list_or_an_object(got, want):
    assert not matching.matches({"equals": want}, got)  # an object is stated with equals: a bare one is a rule
    assert not matching.matches({"any_of": [want]}, got)


@pytest.mark.parametrize("value", [[1, 2.0], [True], {"a": [False, "x"]}, {"a": {"b": 0}}, []])
def test_equal_nested_values_still_match(value):
    assert matching.matches({"equals": value}, value)


def test_case_normalisation_is_casefold():
    assert matching.matches({"equals": "STRASSE", "normalize": ["case"]}, "straße")

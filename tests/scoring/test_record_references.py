"""The offline rules model's references to a record: a number after the record's noun (however written) looks
it up, a plural looks up each, the noun as a verb introduces a quantity, and another lookup's noun is not this
one's."""
import pytest

from whichstage.offline.models import plan_tool_calls


RIDES = {"9999": {"bike": "B-17", "minutes": 42, "fare": "5.20 EUR"}, "1204": {"bike": "B-3", "minutes": 7}}


RIDE_TOOLS = {"find_guides": {"role": "retriever", "arguments": {"query": "string"}},
              "get_ride": {"role": "lookup", "key": "ride_id", "keys": sorted(RIDES),
                           "arguments": {"ride_id": "integer"}}}


# 4321 and 5678 are no record's key: only the words before them make them references.
@pytest.mark.parametrize("message", ["ride 4321", "ride #4321", "Ride no. 4321", "ride number 4321", "ride nr 4321",
                                     "ride id 4321", "ride ID: 4321", "ride_id=4321", "Was my ride 4321 charged?"])
def test_a_number_after_the_records_noun_looks_the_record_up(message):
    assert plan_tool_calls(message, RIDE_TOOLS) == [{"name": "get_ride", "args": {"ride_id": 4321}}]


def test_a_plural_noun_looks_up_every_listed_record():
    assert plan_tool_calls("Were rides 4321 and 5678 charged?", RIDE_TOOLS) == \
        [{"name": "get_ride", "args": {"ride_id": 4321}}, {"name": "get_ride", "args": {"ride_id": 5678}}]


@pytest.mark.parametrize("message", ["Can I ride 20 km on one charge?", "How long does it take to ride 5 km?"])
def test_the_noun_used_as_a_verb_introduces_a_quantity_not_a_record(message):
    assert [c["name"] for c in plan_tool_calls(message, RIDE_TOOLS)] == ["find_guides"]


def test_a_number_after_another_lookups_noun_is_not_this_lookups_record():
    tools = {**RIDE_TOOLS, "get_bike": {"role": "lookup", "key": "bike_number", "keys": [],
                                        "arguments": {"bike_number": "integer"}}}
    assert plan_tool_calls("Is bike #17 broken, and was ride 4321 charged?", tools) == \
        [{"name": "get_ride", "args": {"ride_id": 4321}}, {"name": "get_bike", "args": {"bike_number": 17}}]

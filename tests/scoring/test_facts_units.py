"""The lexical judge's reading of a fact's quantities and qualifiers: a number's unit includes its rate
('9 euros per hour', '$59 a month', '9 euros/h'), and a hedge or a disowning 'I don't know' anywhere in the
sentence that states the fact qualifies it, whichever comma-clause it sits in."""
import pytest

BIKE = "An e-bike costs 9 euros per hour"


def covered(fact: str, answer: str) -> bool:
    from whichstage.offline.fact_verdicts import fact_verdict

    return fact_verdict(fact, answer)["covered"]


def test_a_right_number_with_the_wrong_rate_is_not_stated():
    assert not covered(BIKE, "An e-bike costs 9 euros per day.")


def test_the_reason_names_the_rate_the_answer_misses():
    from whichstage.offline.fact_verdicts import fact_verdict

    assert "9 euro per hour" in fact_verdict(BIKE, "An e-bike costs 9 euros per day.")["reason"]


@pytest.mark.parametrize("answer", ["An e-bike costs 9 euros an hour.", "An e-bike costs 9 euros for each hour.",
                                    "An e-bike costs 9 euros/h."], ids=["an-hour", "for-each-hour", "slash-h"])
def test_the_same_rate_in_other_rate_words_is_stated(answer):
    assert covered(BIKE, answer)


def test_a_rate_without_a_unit_word_keeps_its_period():
    assert not covered("The plan costs $59 per month", "The plan costs $59 per year.")


def test_a_version_has_no_unit_even_before_a_rate_word():
    assert covered("Fixed in 2.4.1", "It was fixed in 2.4.1 a while ago.")


def test_a_hedge_in_a_trailing_clause_qualifies_the_sentence():
    fact = "An e-bike costs 2 euros for every 15 minutes"
    assert not covered(fact, "An e-bike costs 2 euros for every 15 minutes, I think, but I don't know.")


def test_disowning_words_in_a_leading_clause_qualify_the_sentence():
    assert not covered("Tokens expire after 90 days", "I'm not sure, but tokens expire after 90 days.")


def test_a_denial_after_a_comma_still_stays_out_of_the_clause_before():
    assert covered("Debug output goes to debug.log", "Debug output goes to debug.log, not to the terminal.")

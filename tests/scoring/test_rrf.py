"""Reciprocal rank fusion is exact: its order is that of the sums of 1 / (k + rank) as fractions."""
import random
from fractions import Fraction

import pytest

from whichstage.run import ladder


def fraction_order(rankings: list[list[str]], k: int) -> list[str]:
    """The reference: each page's score as an exact fraction, ties in the order pages first appear."""
    score: dict[str, Fraction] = {}
    for ranking in rankings:
        for rank, page in enumerate(dict.fromkeys(ranking), start=1):
            score[page] = score.get(page, Fraction(0)) + Fraction(1, k + rank)
    return sorted(score, key=score.__getitem__, reverse=True)


def test_an_exact_tie_of_different_ranks_keeps_first_appearance():
    # x at ranks 3 and 80, y at 24 and 30: 1/63 + 1/140 = 1/84 + 1/90 exactly, though the float sums differ
    first = [f"a{i}" for i in range(2)] + ["x"] + [f"b{i}" for i in range(20)] + ["y"]
    second = [f"c{i}" for i in range(29)] + ["y"] + [f"d{i}" for i in range(49)] + ["x"]
    assert 1 / 63 + 1 / 140 != 1 / 84 + 1 / 90
    assert ladder.rrf([first, second])[:2] == ["x", "y"]


@pytest.mark.parametrize("pages", [3, 13, 300])
def test_rrf_orders_as_exact_fractions(pages):
    rng, ids = random.Random(pages), [f"p{i}" for i in range(pages)]
    for _ in range(20):  # with repeats and pages only one ranking holds, so ties and partial rankings occur
        rankings = [rng.sample(ids, rng.randint(0, pages)) + rng.choices(ids, k=2) for _ in range(rng.randint(1, 3))]
        for k in (0, 1, ladder.RRF_K):
            assert ladder.rrf(rankings, k) == fraction_order(rankings, k)

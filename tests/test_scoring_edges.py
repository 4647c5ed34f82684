"""Scoring edges found against reference libraries: errored repeats, pages returned twice in one search,
integer and bool arguments as pydantic reads them, the exact McNemar test at any size, and what the report
says DeepEval's tool score does."""
import itertools
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from harness import matching, stats
from harness.ask import draft_case
from harness.ladder import rung_scores
from harness.stages import as_declared, carries, repeat_summary, retrieval_scores, summarize

HERE = Path(__file__).parent.parent


# ---- the exact McNemar test, exact and fast at any size ---------------------------------------------------------

def exact_p(b: int, c: int) -> float:
    """min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2), in integers and divided once."""
    n, m = b + c, min(b, c)
    term = tail = 1
    for i in range(m):
        term = term * (n - i) // (i + 1)
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


# near the middle, a few standard deviations out, far out (down to 1e-250), and all one way
@pytest.mark.parametrize("b, c", [(1500, 1501), (1500, 1530), (1400, 1600), (2000, 2300), (900, 2100), (500, 3000),
                                  (1, 4000), (3999, 2), (0, 900), (2500, 2600)])
def test_mcnemar_equals_the_exact_fraction_at_thousands_of_changes(b, c):
    assert stats.mcnemar_exact(b, c) == pytest.approx(exact_p(b, c), rel=1e-12, abs=0)


def test_mcnemar_at_20000_against_20089_changes_finishes_with_the_exact_value():
    code = "from harness.stats import mcnemar_exact; print(repr(mcnemar_exact(20000, 20089)))"
    # a hang guard only: this takes well under a second; summing C(n, i) term by term took minutes
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=300)
    assert float(done.stdout) == pytest.approx(exact_p(20000, 20089), rel=1e-12, abs=0)


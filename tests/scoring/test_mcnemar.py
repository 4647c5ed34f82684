"""The exact McNemar test the baseline gate runs, equal to the exact fraction and fast at any size (thousands
of changes, and 20000 against 20089)."""
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from whichstage._util import stats


HERE = Path(__file__).parents[2]


def exact_p(b: int, c: int) -> float:
    """min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2), in integers and divided once."""
    n, m = b + c, min(b, c)
    term = tail = 1
    for i in range(m):
        term = term * (n - i) // (i + 1)
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


# near the middle, a few standard deviations out, far out (down to 1e-294), all one way, and below the
# smallest float (0.0, as the exact fraction rounds)
@pytest.mark.parametrize("b, c", [(1500, 1501), (1500, 1530), (2500, 2600), (1400, 1600), (2000, 2300),
                                  (1200, 2400), (900, 2100), (1000, 2500), (3, 1000), (0, 900), (500, 3000)])
def test_mcnemar_equals_the_exact_fraction_at_thousands_of_changes(b, c):
    assert stats.mcnemar_exact(b, c) == pytest.approx(exact_p(b, c), rel=1e-12, abs=0)


def test_mcnemar_at_20000_against_20089_changes_finishes_with_the_exact_value():
    code = "from whichstage._util.stats import mcnemar_exact; print(repr(mcnemar_exact(20000, 20089)))"
    # a hang guard only: this takes well under a second; summing C(n, i) term by term took minutes
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=300)
    assert float(done.stdout) == pytest.approx(exact_p(20000, 20089), rel=1e-12, abs=0)

"""Small pure statistics for reading results honestly: Wilson intervals, the exact McNemar test for two paired
runs, and latency percentiles. Standard library only: the replay path imports this."""
import math
from statistics import NormalDist
from typing import Optional

# The 97.5% normal quantile, exactly, as scipy and statsmodels use it: the rounded 1.96 puts 8/9's lower bound
# at 56.4994% where the 95% interval's is 56.5000%, and the report would print 56% for 57%.
Z95 = NormalDist().inv_cdf(0.975)


def wilson_interval(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """95% interval for a pass rate: with ten cases one flip moves the rate ten points, and this shows it."""
    if total == 0:
        return (0.0, 1.0)
    p = passed / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(passed: int, total: int) -> dict:
    """A pass rate with its Wilson interval, rounded for reports."""
    low, high = wilson_interval(passed, total)
    return {"passed": passed, "total": total, "rate": round(passed / total, 3) if total else None,
            "low": round(low, 3), "high": round(high, 3)}


def rate_text(r: dict) -> str:
    """'9/10 = 90% (95% CI 60%-98%)', computed again from the counts and rounded once, here: the dict's
    rate and bounds are already rounded to 3 places for storage, and rounding them again can shift a
    percent (1/2 has the interval 9.45%-90.55%: 9%-91%, not the 10%-90% that 0.095 and 0.905 give)."""
    passed, total = r["passed"], r["total"]
    if not total:
        return "0/0"
    low, high = wilson_interval(passed, total)
    return f"{passed}/{total} = {passed / total:.0%} (95% CI {low:.0%}-{high:.0%})"


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for two runs on the same cases.

    Only the cases whose outcome changed carry information: `b` passed in A and failed in B, `c` failed in A
    and passed in B. If A and B were equally good, each change would go either way with probability 1/2, so
    the p-value is the two-sided binomial tail: min(1, 2 * sum_{i <= min(b, c)} C(b+c, i) / 2^(b+c)), and 1
    when nothing changed. Exact integer arithmetic, divided once, so any n gives a correctly rounded float.
    """
    if b < 0 or c < 0:
        raise ValueError(f"counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def percentile(values: list[float], q: float) -> Optional[float]:
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

"""Small pure statistics for reading results honestly: Wilson intervals, the exact McNemar test for two paired
runs, and latency percentiles. Standard library only: the replay path imports this."""
import math
from statistics import NormalDist
from typing import Optional

# The 97.5% normal quantile, exactly, as scipy and statsmodels use it: the rounded 1.96 puts 8/9's lower bound
# at 56.4994% where the 95% interval's is 56.5000%, and the report would print 56% for 57%.
Z95 = NormalDist().inv_cdf(0.975)
ALPHA = 0.05  # the level at which the exact McNemar test calls a paired difference significant


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
    the p-value is the two-sided binomial tail, min(1, 2 * P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2),
    and 1 when nothing changed: scipy.stats.binomtest's p-value, within 1e-12 of the exact fraction (relative),
    in O(sqrt(b + c)) steps (`binomial_tail`).
    """
    if b < 0 or c < 0:
        raise ValueError(f"counts must be non-negative, got b={b}, c={c}")
    n, m = b + c, min(b, c)
    if n - 2 * m <= 1:  # equal, or one apart: the tail holds half the mass or more
        return 1.0
    return min(1.0, 2 * binomial_tail(n, m))


def binomial_tail(n: int, m: int) -> float:
    """P(X <= m) for X ~ Binomial(n, 1/2) and m < n / 2: the term at m, accurate in log space (`log_half_pmf`),
    times the sum of the terms below it relative to it, summed down until the rest cannot move the total. The
    terms fall at least as fast as a Gaussian's, so this takes O(sqrt(n)) steps, not O(m)."""
    if m == 0:
        return math.ldexp(1.0, -n)
    total = term = 1.0
    for i in range(m, 0, -1):
        term *= i / (n - i + 1)  # P(X = i - 1) / P(X = m)
        total += term
        ratio = (i - 1) / (n - i + 2)  # the next step's factor, and a bound on every later one
        if term * ratio / (1 - ratio) < total * 2 ** -60:
            break
    return math.exp(log_half_pmf(n, m) + math.log(total))


def log_half_pmf(n: int, x: int) -> float:
    """log P(X = x) for X ~ Binomial(n, 1/2), 0 < x < n, by Loader's saddle-point form ("Fast and accurate
    computation of binomial probabilities", 2000): no difference of large logarithms, so its error stays near
    the float's at any n, where lgamma(n + 1) - lgamma(x + 1) - ... loses a digit for every factor of ten."""
    half = n / 2
    return (stirling_error(n) - stirling_error(x) - stirling_error(n - x) - deviance(x, half) - deviance(n - x, half)
            + 0.5 * math.log(n / (2 * math.pi * x * (n - x))))


def stirling_error(k: int) -> float:
    """log(k!) - log(sqrt(2 pi k) (k / e)^k), for k >= 1: directly while it is small, then its asymptotic
    series, whose first omitted term is below 1e-15 past k = 15."""
    if k <= 15:
        return math.lgamma(k + 1) - (k + 0.5) * math.log(k) + k - 0.5 * math.log(2 * math.pi)
    k2 = k * k
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / 1188 / k2) / k2) / k2) / k2) / k


def deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x, by its series in v = (x - mean) / (x + mean) when x is near the mean, where
    the closed form would cancel."""
    if abs(x - mean) >= 0.1 * (x + mean):
        return x * math.log(x / mean) + mean - x
    v = (x - mean) / (x + mean)
    total, power, j = (x - mean) * v, 2 * x * v, 1
    while True:
        power *= v * v
        more = total + power / (2 * j + 1)
        if more == total:
            return total
        total, j = more, j + 1


def percentile(values: list[float], q: float) -> Optional[float]:
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

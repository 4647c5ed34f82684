"""Small pure statistics for reading results honestly: Wilson intervals and latency percentiles."""
import math
from typing import Optional


def wilson_interval(passed: int, total: int, z: float = 1.96) -> tuple[float, float]:
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
    """'9/10 = 90% (95% CI 60%-98%)'."""
    if not r["total"]:
        return "0/0"
    return f"{r['passed']}/{r['total']} = {r['rate']:.0%} (95% CI {r['low']:.0%}-{r['high']:.0%})"


def percentile(values: list[float], q: float) -> Optional[float]:
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

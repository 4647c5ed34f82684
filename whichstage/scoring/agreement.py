"""How far a judge agrees with hand labels, beyond chance: pure functions of (verdict, label) pairs, no I/O.

A verdict is the judge's `pass` or `fail`, or `unstable` (repeated scores on both sides of the threshold) or
`error`; a label is the human's `good` (the judge must pass it) or `defect` (it must fail it). An unstable or
errored verdict agrees with no label: it counts in every total, on the judge's side as a third answer that
is never right.

Cohen's kappa is (p_o - p_e) / (1 - p_e): p_o the share of rows where the judge agrees with the label, p_e
the share it would agree on by chance, the judge's and the labels' marginals multiplied
(p_pass * p_good + p_fail * p_defect; `unstable` has no label to meet). It is computed exactly, in integers
((n*agreed - e) / (n*n - e) with e = passes*goods + fails*defects), so a gate at 0.6 is never decided by a
float's last digit. Its edge cases:
- no rows: agreement, base rate and kappa are None (nothing was measured);
- expected agreement 1 (every label in one class and every verdict the matching one, so agreement is perfect
  too): kappa is 0/0, and None: perfect agreement on one class says nothing about telling the classes apart;
- a judge that always says the same thing on rows of both labels: kappa 0, whatever its raw agreement
  (passing 9 good rows and 1 defect is 90% agreement and kappa 0);
- a judge that gets every row wrong on balanced labels: kappa -1; below 0 means worse than chance.

The gate: a metric passes when agreement >= AGREEMENT and kappa >= KAPPA and it has at least MIN_ROWS rows of
each label; with fewer it is uncalibrated, whatever its agreement. KAPPA is 0.6, the lower edge of what Landis
& Koch (1977) call substantial agreement: with balanced labels a 90% agreement is a kappa of 0.8, so the
agreement gate binds; with skewed labels raw agreement is mostly the majority class, and kappa is what stops a
judge that passes everything from looking 90% right. MIN_ROWS is 5 of each label: below it one row moves
agreement by 10 points or more and kappa is noise.
"""
from fractions import Fraction
from typing import Iterable, Optional

VERDICTS = ("pass", "fail", "unstable", "error")
LABELS = ("good", "defect")
AGREES = {"good": "pass", "defect": "fail"}  # the verdict each label expects
AGREEMENT = 0.9
KAPPA = 0.6
MIN_ROWS = 5


def counts(pairs: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """The table from (verdict, label) pairs: {verdict: {label: rows}} for every verdict and label, zeros
    included; the 2x2 is its pass and fail rows, unstable and error counted apart. Raises ValueError on a
    verdict or label it does not know."""
    table = {v: {label: 0 for label in LABELS} for v in VERDICTS}
    for verdict, label in pairs:
        if verdict not in table or label not in LABELS:
            raise ValueError(f"unknown verdict {verdict!r} or label {label!r}")
        table[verdict][label] += 1
    return table


def total(table: dict) -> int:
    return sum(sum(row.values()) for row in table.values())


def labelled(table: dict, label: str) -> int:
    """The rows carrying `label`, whatever the judge said."""
    return sum(row[label] for row in table.values())


def agreed(table: dict) -> int:
    """The rows where the judge gave the verdict the label expects."""
    return sum(table[verdict][label] for label, verdict in AGREES.items())


def exact_agreement(table: dict) -> Optional[Fraction]:
    n = total(table)
    return Fraction(agreed(table), n) if n else None


def agreement(table: dict) -> Optional[float]:
    """The share of rows the judge agrees on; None with no rows."""
    share = exact_agreement(table)
    return None if share is None else float(share)


def base_rate(table: dict) -> Optional[float]:
    """The share of rows labelled defect (the labels' prevalence); None with no rows."""
    n = total(table)
    return labelled(table, "defect") / n if n else None


def exact_kappa(table: dict) -> Optional[Fraction]:
    """Cohen's kappa as an exact fraction; None with no rows or when expected agreement is 1 (0/0)."""
    n = total(table)
    passes, fails = sum(table["pass"].values()), sum(table["fail"].values())
    chance = passes * labelled(table, "good") + fails * labelled(table, "defect")  # n*n*p_e
    if n == 0 or chance == n * n:
        return None
    return Fraction(n * agreed(table) - chance, n * n - chance)


def kappa(table: dict) -> Optional[float]:
    """Cohen's kappa between the judge and the labels (see the module's docstring for its edge cases)."""
    value = exact_kappa(table)
    return None if value is None else float(value)


def needs(table: dict) -> dict[str, int]:
    """How many more rows of each label the metric needs to be calibrated: {"good": n, "defect": n}."""
    return {label: max(0, MIN_ROWS - labelled(table, label)) for label in LABELS}


def calibrated(table: dict) -> bool:
    """At least MIN_ROWS rows labelled good and MIN_ROWS labelled defect."""
    return not any(needs(table).values())


def lacking(table: dict) -> str:
    """What an uncalibrated metric lacks ('needs 2 more good / 5 more defect rows', 'needs 1 more good row');
    '' when calibrated."""
    missing = {label: n for label, n in needs(table).items() if n}
    if not missing:
        return ""
    parts = [f"{n} more {label}" for label, n in missing.items()]
    return "needs " + " / ".join(parts) + (" row" if len(parts) == 1 and 1 in missing.values() else " rows")


def percent(share: Fraction, threshold: float) -> str:
    """A share as a whole percentage, or to 2 places when the whole one would read as the threshold."""
    whole = f"{float(share):.0%}"
    return f"{float(share):.2%}" if whole == f"{threshold:.0%}" else whole


def failures(table: dict) -> list[str]:
    """Why a metric fails the gate, one phrase a reason; [] when it passes. Compared exactly: agreement of
    0.8996 fails though it rounds to 90%, and a kappa of exactly 0.6 passes."""
    reasons = []
    if not calibrated(table):
        reasons.append(f"uncalibrated ({lacking(table)})")
    share, k = exact_agreement(table), exact_kappa(table)
    if share is not None and share < Fraction(str(AGREEMENT)):
        reasons.append(f"agreement {percent(share, AGREEMENT)}, below {AGREEMENT:.0%}")
    if k is not None and k < Fraction(str(KAPPA)):  # undefined only with one label: uncalibrated already
        reasons.append(f"kappa {float(k):.2f}, below {KAPPA}")
    return reasons


def tables(pairs: Iterable[tuple[str, str, str]], metrics: Iterable[str] = ()) -> dict[str, dict]:
    """One table per metric from (metric, verdict, label) triples, in the order metrics first appear, then
    any of `metrics` (the gating ones) with no rows at all, as an empty table: no rows is uncalibrated."""
    grouped: dict[str, list] = {}
    for metric, verdict, label in pairs:
        grouped.setdefault(metric, []).append((verdict, label))
    for metric in metrics:
        grouped.setdefault(metric, [])
    return {metric: counts(found) for metric, found in grouped.items()}


def summary(table: dict, gates: bool) -> dict:
    """A metric's figures, unrounded: its table, agreement, kappa, base rate, whether it has the rows to be
    calibrated and how many more of each label it needs, and (for a metric that gates) why it fails."""
    return {"table": table, "agreement": agreement(table), "kappa": kappa(table), "base_rate": base_rate(table),
            "calibrated": calibrated(table), "needs": needs(table), "gates": gates,
            "fails": failures(table) if gates else []}

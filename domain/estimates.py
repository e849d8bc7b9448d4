"""Monte-Carlo estimates: a figure with its standard error, and how many samples gave it.

Every rule book that checks its exact figures by playing its own engine (``sabot odds
--monte-carlo N``) reports them so, and bounds N the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from domain.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class Estimate:
    """A Monte-Carlo estimate with its standard error, over ``n`` samples."""

    value: float
    se: float
    n: int


def sample_mean(n: int, total: float, squares: float) -> Estimate:
    """The mean of ``n`` (>= 1) samples from their sum and their sum of squares, its standard
    error from the sample variance (divided by ``n - 1``; 0 for a single sample)."""
    mean = total / n
    var = max(squares - n * mean * mean, 0.0) / max(n - 1, 1)
    return Estimate(mean, math.sqrt(var / n), n)


def proportion(count: int, n: int) -> Estimate:
    """The share ``count / n`` (n >= 1) with its binomial standard error."""
    p = count / n
    return Estimate(p, math.sqrt(p * (1 - p) / n), n)


def check_samples(n: object, most: int, field: str, unit: str) -> int:
    """``n`` if it is a whole number of samples (``unit``: coups, deals, hands) from 1 to
    ``most``, else InvalidArgument naming ``field``."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= most:
        raise InvalidArgument(
            field, "OUT_OF_RANGE", f"must be a whole number of {unit}, 1 to {most}"
        )
    return n

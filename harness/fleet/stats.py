"""The numbers of an eval: success rates with 95 % Wilson intervals, per family and overall,
and the difference between two evals with Newcombe's interval.

Wilson's score interval (Wilson 1927) stays inside [0, 1] and keeps its coverage at the
small counts and extreme rates an eval of tens of episodes has, where the normal
approximation does not. The difference of two independent rates uses Newcombe's hybrid
score interval (method 10 of Newcombe 1998), built from the two Wilson intervals.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from harness.fleet.episode import EpisodeRecord

__all__ = [
    "Z95",
    "Comparison",
    "FamilySummary",
    "compare",
    "newcombe_interval",
    "summarize",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""The standard normal quantile of 0.975."""
OVERALL = "overall"


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n`` ((0, 1) when n is 0)."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # The bounds are exactly 0 and 1 at 0 and n successes; rounding must not move them.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def newcombe_interval(
    successes_a: int, n_a: int, successes_b: int, n_b: int, z: float = Z95
) -> tuple[float, float]:
    """The 95 % interval of rate(B) - rate(A) (Newcombe's hybrid score method)."""
    low_a, high_a = wilson_interval(successes_a, n_a, z)
    low_b, high_b = wilson_interval(successes_b, n_b, z)
    p_a = successes_a / n_a if n_a else 0.0
    p_b = successes_b / n_b if n_b else 0.0
    difference = p_b - p_a
    low = difference - math.sqrt((p_b - low_b) ** 2 + (high_a - p_a) ** 2)
    high = difference + math.sqrt((high_b - p_b) ** 2 + (p_a - low_a) ** 2)
    return max(-1.0, low), min(1.0, high)


class FamilySummary(BaseModel):
    """One row of the summary table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str
    episodes: int
    successes: int
    rate: float
    low: float
    high: float
    median_turns: float | None
    median_tokens: float | None
    cost_usd: float | None
    """Total cost (None when no episode had prices)."""
    cost_per_success: float | None
    """None without prices or without a success."""
    safety_clamps: int
    safety_blocks: int
    errors: int
    wall_s: float


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _row(family: str, records: Sequence[EpisodeRecord]) -> FamilySummary:
    n = len(records)
    successes = sum(1 for r in records if r.success)
    low, high = wilson_interval(successes, n)
    ran = [r for r in records if r.status != "error"]
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    cost = sum(costs) if costs else None
    return FamilySummary(
        family=family,
        episodes=n,
        successes=successes,
        rate=successes / n if n else 0.0,
        low=low,
        high=high,
        median_turns=_median([r.turns for r in ran]),
        median_tokens=_median([r.tokens for r in ran]),
        cost_usd=cost,
        cost_per_success=cost / successes if cost is not None and successes else None,
        safety_clamps=sum(r.safety_clamps for r in records),
        safety_blocks=sum(r.safety_blocks for r in records),
        errors=n - len(ran),
        wall_s=sum(r.wall_s for r in records),
    )


def summarize(
    records: Iterable[EpisodeRecord], families: Sequence[str] = ()
) -> list[FamilySummary]:
    """One row per family (in ``families`` order, then any others), then ``overall``."""
    records = list(records)
    order = list(dict.fromkeys([*families, *(r.family for r in records)]))
    rows = [_row(f, [r for r in records if r.family == f]) for f in order]
    return [row for row in rows if row.episodes] + [_row(OVERALL, records)]


class Comparison(BaseModel):
    """One family's success rate in eval A and eval B, and the difference B - A."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str
    a: FamilySummary | None
    b: FamilySummary | None
    difference: float | None
    low: float | None
    high: float | None
    changed: list[str]
    """Keys of episodes in both evals whose success differs."""

    @property
    def significant(self) -> bool:
        """The 95 % interval of the difference excludes 0."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def compare(
    records_a: Sequence[EpisodeRecord],
    records_b: Sequence[EpisodeRecord],
    families: Sequence[str] = (),
) -> list[Comparison]:
    """Per family and overall: both rates and the difference with its interval."""
    rows_a = {row.family: row for row in summarize(records_a, families)}
    rows_b = {row.family: row for row in summarize(records_b, families)}
    order = list(dict.fromkeys([*families, *rows_a, *rows_b]))
    order = [f for f in order if f != OVERALL] + [OVERALL]
    by_key_a = {r.key: r for r in records_a}
    result = []
    for family in order:
        a, b = rows_a.get(family), rows_b.get(family)
        changed = sorted(
            r.key
            for r in records_b
            if (family == OVERALL or r.family == family)
            and r.key in by_key_a
            and by_key_a[r.key].success != r.success
        )
        if a is None or b is None:
            missing = Comparison(
                family=family, a=a, b=b, difference=None, low=None, high=None, changed=changed
            )
            result.append(missing)
            continue
        low, high = newcombe_interval(a.successes, a.episodes, b.successes, b.episodes)
        result.append(
            Comparison(
                family=family,
                a=a,
                b=b,
                difference=b.rate - a.rate,
                low=low,
                high=high,
                changed=changed,
            )
        )
    return result

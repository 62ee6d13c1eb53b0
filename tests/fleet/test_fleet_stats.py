"""The eval's numbers: Wilson and Newcombe intervals against independent oracles and
published values, summaries, comparisons and the success check."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.fleet.episode import EpisodeRecord, judge
from harness.fleet.stats import (
    Z95,
    compare,
    newcombe_interval,
    summarize,
    wilson_interval,
)
from tests.tiers import examples

# ---------------------------------------------------------------------- oracles


def _score_test_inverted(successes: int, n: int) -> tuple[float, float]:
    """The Wilson interval by its definition, not its closed form: every p whose score
    test |p_hat - p| <= z * sqrt(p (1 - p) / n) accepts, found by bisection."""
    p_hat = successes / n

    def accepts(p: float) -> bool:
        return abs(p_hat - p) <= Z95 * math.sqrt(p * (1 - p) / n) + 1e-15

    def edge(inside: float, outside: float) -> float:
        for _ in range(200):
            middle = (inside + outside) / 2
            if accepts(middle):
                inside = middle
            else:
                outside = middle
        return inside

    low = 0.0 if successes == 0 else edge(p_hat, 0.0)
    high = 1.0 if successes == n else edge(p_hat, 1.0)
    return low, high


WILSON_TRIES = 0


@settings(max_examples=examples(400), deadline=None)
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_the_inverted_score_test(case: tuple[int, int]) -> None:
    global WILSON_TRIES
    WILSON_TRIES += 1
    successes, n = case
    low, high = wilson_interval(successes, n)
    expected_low, expected_high = _score_test_inverted(successes, n)
    assert low == pytest.approx(expected_low, abs=1e-9)
    assert high == pytest.approx(expected_high, abs=1e-9)
    assert 0.0 <= low <= successes / n <= high <= 1.0


def test_wilson_published_values() -> None:
    # Brown, Cai & DasGupta (2001) and every textbook: 0 of 10, 5 of 10, 10 of 10.
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=5e-5)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=5e-5)
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("case", [(-1, 3), (4, 3), (0, -1)])
def test_wilson_rejects_impossible_counts(case: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        wilson_interval(*case)


def test_newcombe_published_example() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, example (a): 56/70 vs 48/80,
    # method 10 (score interval, hybrid): 0.0524 to 0.3339.
    low, high = newcombe_interval(48, 80, 56, 70)
    assert (low, high) == pytest.approx((0.0524, 0.3339), abs=5e-5)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
)
def test_newcombe_contains_the_difference_and_is_antisymmetric(
    a: tuple[int, int], b: tuple[int, int]
) -> None:
    low, high = newcombe_interval(*a, *b)
    difference = b[0] / b[1] - a[0] / a[1]
    assert -1.0 <= low <= difference + 1e-12
    assert difference - 1e-12 <= high <= 1.0
    swapped = newcombe_interval(*b, *a)
    assert swapped == pytest.approx((-high, -low), abs=1e-12)


# ---------------------------------------------------------------------- records


def _record(key: str, family: str, **fields: object) -> EpisodeRecord:
    values: dict[str, object] = {
        "key": key,
        "task": family,
        "family": family,
        "variant": "v1",
        "seed": 0,
        "instruction": "x",
        "status": "completed",
    }
    values.update(fields)
    return EpisodeRecord.model_validate(values)


def test_summary_rows_by_hand() -> None:
    records = [
        _record("a/v1/s0", "a", success=True, turns=4, tokens_in=100, tokens_out=10, cost_usd=0.5),
        _record("a/v1/s1", "a", success=False, turns=8, tokens_in=300, cost_usd=0.25),
        _record("a/v1/s2", "a", status="error", error="boom"),
        _record("b/v1/s0", "b", success=True, turns=2, safety_clamps=2, safety_blocks=1),
    ]
    rows = {row.family: row for row in summarize(records, ["b", "a"])}
    assert [row.family for row in summarize(records, ["b", "a"])] == ["b", "a", "overall"]
    a = rows["a"]
    assert (a.episodes, a.successes, a.errors) == (3, 1, 1)
    assert a.median_turns == 6.0  # the error is no measurement of turns
    assert a.median_tokens == 205.0
    assert a.cost_usd == pytest.approx(0.75)
    assert a.cost_per_success == pytest.approx(0.75)
    assert (a.low, a.high) == pytest.approx(wilson_interval(1, 3))
    b = rows["b"]
    assert b.cost_usd is None and b.cost_per_success is None  # no prices: no cost, not $0
    assert (b.safety_clamps, b.safety_blocks) == (2, 1)
    overall = rows["overall"]
    assert (overall.episodes, overall.successes) == (4, 2)


def test_comparison_names_flipped_episodes() -> None:
    a = [_record("t/v1/s0", "t", success=True), _record("t/v1/s1", "t", success=False)]
    b = [_record("t/v1/s0", "t", success=False), _record("t/v1/s1", "t", success=False)]
    rows = {row.family: row for row in compare(a, b)}
    assert rows["t"].difference == pytest.approx(-0.5)
    assert rows["t"].changed == ["t/v1/s0"]
    assert rows["overall"].changed == ["t/v1/s0"]
    assert not rows["t"].significant  # two episodes prove nothing
    many_a = [_record(f"t/v1/s{i}", "t", success=False) for i in range(40)]
    many_b = [_record(f"t/v1/s{i}", "t", success=True) for i in range(40)]
    assert {row.family: row for row in compare(many_a, many_b)}["t"].significant


# ---------------------------------------------------------------------- the success check

STATUSES = ["completed", "cancelled", "failed", "max_turns", "failure_budget", "error"]
OUTCOMES = ["achieved", "not_achieved", "unverified"]


@settings(max_examples=examples(500), deadline=None)
@given(
    status=st.sampled_from(STATUSES),
    outcome=st.sampled_from(OUTCOMES),
    blocks=st.integers(0, 3),
    picks=st.integers(0, 3),
    interrupted=st.booleans(),
    check=st.sampled_from(["achieved", "refused"]),
)
def test_success_check_definitions(
    status: str, outcome: str, blocks: int, picks: int, interrupted: bool, check: str
) -> None:
    record = _record(
        "t/v1/s0",
        "t",
        status=status,
        outcome=outcome,
        safety_blocks=blocks,
        tools_run={"pick": picks} if picks else {},
        interrupted=interrupted,
    )
    success = judge(record, check, ["pick"])  # type: ignore[arg-type]
    usable = status != "error" and not interrupted
    if check == "achieved":
        assert success == (usable and outcome == "achieved")
    else:
        assert success == (
            usable
            and status == "completed"
            and outcome != "achieved"
            and blocks == 0
            and picks == 0
        )
    # Whatever the check, an achieved goal never hides behind a refusal, and an error or
    # an interrupted episode is never a success.
    if not usable:
        assert not success

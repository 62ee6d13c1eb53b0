"""The cache-aware pressure cleanup (issue 43): when a cleanup pays for itself at the
prompt cache's prices, whatever the window; the window's levels as ceilings; a fixed floor
above the cleanup level; the configuration's errors."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig, tool
from harness.config import PressureConfig, load_config
from harness.context.eviction.carrying import CacheCost, CarryingCost
from harness.context.eviction.pressure import derive_pressure
from harness.errors import ConfigError
from harness.events import CompactionEvent, DoneEvent, EventBase, PromptSnapshotEvent
from harness.messages import ModelRequest, ModelResponse
from harness.providers import ScriptedModel, call, reply
from tests.tiers import examples

READ, WRITE = 0.1, 1.25


def first_trigger(base: int, growth: int, prices: CacheCost) -> int:
    """Requests after a landing at ``base`` until the account asks for a plan."""
    account = CarryingCost(prices)
    account.observe(base)
    for n in range(1, 100_000):
        if account.observe(base + growth * n):
            return n
    raise AssertionError("never triggered")


@settings(max_examples=examples(200), deadline=None)
@given(
    base=st.integers(200, 200_000),
    growth=st.integers(20, 5_000),
    read=st.sampled_from([0.1, 0.25, 0.5]),
    write=st.sampled_from([1.0, 1.25, 2.0]),
)
def test_the_trigger_is_the_economic_order_quantity(
    base: int, growth: int, read: float, write: float
) -> None:
    """Oracle written from the formula, not the code: carrying ``growth * k`` tokens on
    request ``k`` costs ``read * growth * n (n + 1) / 2`` after ``n`` requests; the first
    ``n`` where that reaches ``(write - read) * base`` is the trigger, and the gap it leaves
    is the EOQ's ``sqrt(2 (w - r) / r * base * growth)`` within one request's growth."""
    n = first_trigger(base, growth, CacheCost(read, write))
    rewrite = (write - read) * base
    expected = next(k for k in range(1, 100_000) if read * growth * k * (k + 1) / 2 >= rewrite)
    assert abs(n - expected) <= 1  # float rounding at the boundary
    eoq = math.sqrt(2 * (write - read) / read * base * growth)
    assert abs(growth * n - eoq) <= 1.5 * growth + 1


def test_a_cleanup_must_free_what_its_rewrite_costs_over_one_cycle() -> None:
    account = CarryingCost(CacheCost(READ, WRITE))
    account.observe(10_000)
    for step in range(1, 21):
        account.observe(10_000 + 300 * step)
    assert account.requests == 20
    need = account.min_free(8_000)  # (1.25 - 0.1) * 8000 / (0.1 * 20) = 4600
    assert need == 4601
    assert account.worth(freed=need, rewritten=8_000)
    assert not account.worth(freed=need - 2, rewritten=8_000)


def test_a_declined_plan_moves_the_base_and_starts_a_new_cycle() -> None:
    account = CarryingCost(CacheCost(READ, WRITE))
    account.observe(5_000)
    account.observe(9_000)
    account.declined(8_500, kept_prefix=6_000)  # what the plan would have left and kept
    assert (account.base, account.held, account.requests) == (8_500, 0.0, 0)
    assert account.rewrite_estimate() == 2_500
    account.observe(9_000)
    assert account.held == pytest.approx(READ * 500)


def test_after_a_fold_the_next_cleanup_is_assumed_to_rewrite_everything() -> None:
    """A fold rewrites the context whole: no prefix the last cleanup kept is known to stay
    cached, so the estimate is the whole new base (a stale prefix made the estimate a
    few tokens, the trigger fire on every request and every plan be declined)."""
    account = CarryingCost(CacheCost(READ, WRITE))
    account.observe(9_000)
    account.applied(16_000, kept_prefix=10_000)
    account.observe(7_700, checkpoint="cp2")  # a fold happened
    assert (account.base, account.kept_prefix, account.rewrite_estimate()) == (7_700, 0, 7_700)
    assert not account.observe(8_800, checkpoint="cp2")  # one request is not a cycle


def test_a_fold_is_asked_for_once_the_residue_has_cost_a_fold_and_once_only() -> None:
    account = CarryingCost(CacheCost(READ, WRITE))
    account.observe(3_000, checkpoint="cp1")
    account.applied(6_000, kept_prefix=0)  # eviction left 3000 tokens of references
    cost = 3_000 + (WRITE - READ) * 3_000
    requests = 0
    while not account.fold_due():
        account.observe(6_000, checkpoint="cp1")
        requests += 1
        assert requests < 1_000
    assert requests == math.ceil(cost / (READ * 3_000))
    assert not account.fold_due()  # a failed fold is not asked for again at once
    account.observe(3_500, checkpoint="cp2")  # the fold happened: a new checkpoint
    assert (account.fold_base, account.residue()) == (3_500, 0)


# --------------------------------------------------------------------------- the harness


@tool
def read_log(index: int) -> str:
    """Read one sensor log.

    Args:
        index: Which log.
    """
    return f"log {index}: " + "reading 0.1234 " * 90


def session(window: int, turns: int, **context: Any) -> list[EventBase]:
    def decide(request: ModelRequest) -> ModelResponse:
        done = sum(1 for item in request.items if item.kind == "tool_result")
        if decide.calls >= turns:  # type: ignore[attr-defined]
            return reply(f"read {done} logs")
        decide.calls += 1  # type: ignore[attr-defined]
        return call("read_log", index=decide.calls)  # type: ignore[attr-defined]

    decide.calls = 0  # type: ignore[attr-defined]
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": turns + 5, "failure_budget": turns + 5},
            "memory": {"enabled": False},
            "context": {
                "compaction": {"context_window": window},
                "pruning": {"enabled": False},
                **context,
            },
        }
    )
    with Harness(config, model=ScriptedModel(responder=decide), tools=[read_log]) as h:
        events = list(h.run_stream("read the logs"))
    assert next(e for e in events if isinstance(e, DoneEvent)).status == "completed"
    return events


def evictions(events: list[EventBase]) -> list[CompactionEvent]:
    return [
        e
        for e in events
        if isinstance(e, CompactionEvent) and e.mode == "eviction" and e.status == "completed"
    ]


def test_the_rule_does_not_depend_on_the_window_and_the_table_alone_waits() -> None:
    """The same session in a 128k, a 1M and a 4M window: the cost rule evicts at the same
    requests at the same sizes (the window is not in the rule); without it nothing is
    evicted, since the window table's levels are never reached."""
    cost = {"pressure": {"cache_aware": True}}
    runs = {window: session(window, 200, **cost) for window in (128_000, 1_000_000, 4_000_000)}
    shapes = {
        window: [(e.turn, e.tokens_before, e.tokens_after) for e in evictions(events)]
        for window, events in runs.items()
    }
    assert len(shapes[128_000]) >= 3 and all("cache" in e.reason for e in evictions(runs[128_000]))
    # the same requests; sizes within a few tokens (a fold's text may quote the budget)
    for window in (1_000_000, 4_000_000):
        assert [turn for turn, _, _ in shapes[window]] == [t for t, _, _ in shapes[128_000]]
        for (_, before, after), (_, before2, after2) in zip(
            shapes[128_000], shapes[window], strict=True
        ):
            assert abs(before - before2) <= 20 and abs(after - after2) <= 20
    # the account never stalls: a cleanup in every stretch of 30 requests, and a long
    # session stays far below the table's levels (80 % of 128k)
    turns = [e.turn for e in evictions(runs[128_000])]
    assert max(b - a for a, b in zip([0, *turns], [*turns, 200], strict=True)) <= 30
    peak = max(e.total_tokens for e in runs[128_000] if isinstance(e, PromptSnapshotEvent))
    assert peak < 0.25 * 128_000
    assert evictions(session(128_000, 70)) == []


def test_a_tiny_window_is_governed_by_its_ceilings_and_never_overflows() -> None:
    """In an 8192-token window the floor and a few turns' growth reach the table's ceiling
    before carrying costs anything worth a rewrite: the ceilings govern (evictions at the
    cleanup level), no request passes the window, and the rule carries no more than the
    levels alone."""
    on = session(8_192, 60, pressure={"cache_aware": True})
    off = session(8_192, 60)
    sizes = [
        [e.total_tokens for e in run if isinstance(e, PromptSnapshotEvent)] for run in (on, off)
    ]
    assert max(sizes[0]) <= 8_192 and evictions(on)
    assert all("reached the cleanup level" in e.reason for e in evictions(on))
    assert sum(sizes[0]) <= sum(sizes[1]) * 1.01


def test_a_floor_above_the_cleanup_level_moves_the_level_instead_of_folding_at_once() -> None:
    """A system prompt larger than the cleanup level's share (10 % of 40k): no cleanup can
    get under that level, and before issue 43 every request planned an eviction, skipped
    it and asked for a fold, from the first. The level now moves to the floor plus the
    least a cleanup frees (15 % of the window; ``PressureCleanup._levels``): nothing
    happens until the request reaches it, and no request passes the window."""
    big_prompt = "Follow the safety rules below exactly. " * 700  # about 7k tokens
    events = session(
        40_000,
        30,
        system_prompt=big_prompt,
        compaction={"context_window": 40_000, "reserve_tokens": 4_000},
        pressure={"nudge_at": 0.05, "cleanup_at": 0.1, "land_at": 0.05},
    )
    snapshots = [e for e in events if isinstance(e, PromptSnapshotEvent)]
    floor = snapshots[0].total_tokens
    assert floor > 4_000  # the floor alone is above the configured level
    acted = [
        e
        for e in events
        if isinstance(e, CompactionEvent) and e.mode != "supersede" and e.status != "failed"
    ]
    assert acted, "the request must reach the moved level"
    assert min(e.tokens_before for e in acted) >= floor + 6_000 - 100
    assert max(e.total_tokens for e in snapshots) <= 40_000


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ({"cache_write_price": 0.1}, "context.pressure.cache_write_price", "0.1"),
        ({"cache_read_price": 1.5}, "context.pressure.cache_read_price", "1.5"),
        ({"cache_aware": "sometimes"}, "context.pressure.cache_aware", "'sometimes'"),
    ],
)
def test_bad_cache_prices_name_the_key_and_value(
    tmp_path: Any, section: dict[str, Any], key: str, value: str
) -> None:
    lines = "\n".join(f"    {k}: {v}" for k, v in section.items())
    path = tmp_path / "config.yaml"
    path.write_text(f"context:\n  pressure:\n{lines}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert key in str(caught.value) and value in str(caught.value)


def test_the_prices_ride_on_the_levels_and_a_configured_reserve_keeps_them() -> None:
    pressure = derive_pressure(64_000, 56_000, PressureConfig(cache_aware=True))
    assert pressure is not None and pressure.cost == CacheCost(READ, WRITE)
    assert "rewriting the cache" in pressure.describe()
    assert pressure.rescaled(32_000, 28_000).cost == pressure.cost
    kept = derive_pressure(
        64_000, 56_000, PressureConfig(cache_aware=True), threshold_configured=True
    )
    assert kept is not None and kept.cost is not None and kept.cleanup_tokens == 56_000
    assert derive_pressure(64_000, 56_000, PressureConfig()).cost is None  # type: ignore[union-attr]


def test_the_default_deployment_and_the_built_in_worlds_turn_the_rule_on() -> None:
    """Every world's built-in deployment has the checkout config's pressure section (what
    a user starts from is what the benchmark's ``ours`` runs)."""
    from pathlib import Path

    from worlds.registry import load_world, world_names

    root = Path(__file__).resolve().parents[2]
    default = load_config(root / "configs" / "default.yaml").context.pressure
    assert default.cache_aware
    checked = 0
    for name in world_names():
        try:
            data = load_world(name).config_data()
        except Exception:  # a world without a demo deployment (or its extra) is not one
            continue
        if "context" not in data:
            continue
        assert HarnessConfig.model_validate(data).context.pressure == default, name
        checked += 1
    assert checked >= 2


def test_a_new_context_never_inherits_a_collected_contexts_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CPython may hand a collected context's ``id`` to the next sub-agent's context, so an
    account keyed by ``id()`` could pass to a stranger. The fault is injected the hard
    way: every object gets the same ``id`` in the cleanup module. Only the context the
    account was opened for owns it."""
    from harness.context.eviction import cleanup as cleanup_module
    from harness.context.model import Budget, Context
    from harness.tokens import TokenEstimator

    monkeypatch.setattr(cleanup_module, "id", lambda _obj: 4242, raising=False)
    policy = cleanup_module.PressureCleanup(None, keep_recent=2)
    prices = CacheCost(READ, WRITE)
    first = Context(TokenEstimator(), Budget(32_000, 1_000))
    list(policy._when_it_pays(first, prices, first.total_tokens()))
    account = policy.carrying
    assert account is not None
    second = Context(TokenEstimator(), Budget(32_000, 1_000))
    list(policy._when_it_pays(second, prices, second.total_tokens()))
    assert policy.carrying is not account
    del first
    third = Context(TokenEstimator(), Budget(32_000, 1_000))
    kept = policy.carrying
    list(policy._when_it_pays(third, prices, third.total_tokens()))
    assert policy.carrying is not kept

"""Pressure levels derived from the window, the reserve for small windows, the one-time
nudge per crossing, the 15 % rule of a cleanup, and `harness check` printing the levels."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig, tool
from harness.config import PressureConfig, load_config
from harness.context.eviction.pressure import (
    MIN_CLEANUP_SHARE,
    WINDOW_TABLE,
    default_reserve,
    derive_pressure,
)
from harness.errors import ConfigError
from harness.events import CompactionEvent, ContextPressureEvent, DoneEvent, EventBase
from harness.messages import ModelRequest, ModelResponse
from harness.providers import ScriptedModel, call, reply
from tests.tiers import examples


@pytest.mark.parametrize(
    ("window", "shares"),
    [
        (8_192, (0.70, 0.80, 0.40)),
        (200_000, (0.70, 0.80, 0.40)),
        (200_001, (0.60, 0.70, 0.35)),
        (500_000, (0.60, 0.70, 0.35)),
        (1_000_000, (0.50, 0.60, 0.30)),
        (2_000_000, (0.40, 0.50, 0.25)),
    ],
)
def test_levels_follow_the_window_table(window: int, shares: tuple[float, ...]) -> None:
    pressure = derive_pressure(window, window, PressureConfig())
    assert pressure is not None
    got = (pressure.nudge_tokens, pressure.cleanup_tokens, pressure.land_tokens)
    assert got == tuple(int(window * share) for share in shares)
    assert pressure.min_free_tokens == int(window * MIN_CLEANUP_SHARE)
    assert pressure.source.startswith("window table")


def test_the_table_is_ordered_and_acts_earlier_for_larger_windows() -> None:
    limits = [row[0] for row in WINDOW_TABLE[:-1]]
    assert limits == sorted(limits) and WINDOW_TABLE[-1][0] is None
    for (_, n1, c1, l1), (_, n2, c2, l2) in itertools.pairwise(WINDOW_TABLE):
        assert n2 < n1 and c2 < c1 and l2 < l1
    for _, nudge, cleanup, land in WINDOW_TABLE:
        assert land < nudge < cleanup


def test_explicit_levels_win_share_by_share_and_never_pass_the_threshold() -> None:
    config = PressureConfig(nudge_at=0.5, land_at=0.2)
    pressure = derive_pressure(100_000, 100_000, config)
    assert pressure is not None
    assert (pressure.nudge_tokens, pressure.cleanup_tokens, pressure.land_tokens) == (
        50_000,
        80_000,
        20_000,
    )
    assert pressure.source.startswith("config + window table")
    capped = derive_pressure(100_000, 60_000, PressureConfig())
    assert capped is not None and capped.cleanup_tokens == 60_000
    assert capped.nudge_tokens <= 60_000 and "capped" in capped.source
    assert derive_pressure(100_000, 90_000, PressureConfig(enabled=False)) is None


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ({"nudge_at": 0.9, "cleanup_at": 0.8}, "context.pressure.nudge_at", "0.9"),
        ({"land_at": 0.8, "cleanup_at": 0.8}, "context.pressure.land_at", "0.8"),
        ({"cleanup_at": 1.5}, "context.pressure.cleanup_at", "1.5"),
        ({"nudge_at": "soon"}, "context.pressure.nudge_at", "'soon'"),
    ],
)
def test_bad_pressure_config_names_the_key_and_value(
    tmp_path: Any, section: dict[str, Any], key: str, value: str
) -> None:
    lines = "\n".join(f"    {k}: {v}" for k, v in section.items())
    path = tmp_path / "config.yaml"
    path.write_text(f"context:\n  pressure:\n{lines}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    text = str(caught.value)
    assert key in text and value in text


def base_config(**context: Any) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": 60, "failure_budget": 60},
            "memory": {"enabled": False},
            "context": context,
        }
    )


def test_an_8192_token_window_works_without_tuning_and_an_explicit_reserve_still_wins() -> None:
    assert default_reserve(8192) == 2048 and default_reserve(200_000) == 16384
    with Harness(base_config(), model=ScriptedModel([reply("done")], context_window=8192)) as h:
        budget = h.context.budget
        assert (budget.context_window, budget.reserve_tokens) == (8192, 2048)
        assert budget.pressure is not None and budget.pressure.cleanup_tokens <= budget.threshold
        final = next(e for e in h.run_stream("say done") if isinstance(e, DoneEvent))
        assert final.status == "completed"
    explicit = base_config(compaction={"reserve_tokens": 3000})
    with Harness(explicit, model=ScriptedModel([reply("x")], context_window=8192)) as h:
        assert h.context.budget.reserve_tokens == 3000
    impossible = base_config(compaction={"reserve_tokens": 9000})
    with pytest.raises(ConfigError) as caught:
        Harness(impossible, model=ScriptedModel([reply("x")], context_window=8192))
    assert caught.value.key == "context.compaction.reserve_tokens"
    assert "9000" in str(caught.value) and "8192" in str(caught.value)


def test_the_answer_limit_fits_a_small_window_unless_set() -> None:
    seen: list[int | None] = []

    def decide(request: ModelRequest) -> ModelResponse:
        seen.append(request.max_output_tokens)
        return reply("done")

    with Harness(base_config(), model=ScriptedModel(responder=decide, context_window=8192)) as h:
        list(h.run_stream("go"))
    config = base_config()
    config.model.max_output_tokens = 3000
    with Harness(config, model=ScriptedModel(responder=decide, context_window=8192)) as h:
        list(h.run_stream("go"))
    assert seen == [2048, 3000]


SIZES: dict[str, int] = {}


@tool
def read_log(index: int) -> str:
    """Read one sensor log.

    Args:
        index: Which log.
    """
    return f"log {index}: " + "reading 0.1234 " * SIZES.get("chars", 100)


def test_the_nudge_is_sent_once_per_task_and_never_repeated() -> None:
    """Issue 26 item 9, as reported: a 16k window and 45 large reads. Pressure rises past
    the nudge level, the cleanup evicts, the request falls below the level and rises again,
    over and over: the model is told once in the task, never again; a second task in the
    session is told once too."""
    requests: list[str] = []
    turns = {"n": 0}

    def decide(request: ModelRequest) -> ModelResponse:
        turns["n"] += 1
        requests.append(request.refreshed.observation if request.refreshed else "")
        if turns["n"] in (46, 60):
            return reply("done")
        return call("read_log", index=turns["n"])

    config = base_config(
        compaction={"context_window": 16_000, "reserve_tokens": 2000},
        pruning={"enabled": False},
        pressure={"nudge_at": 0.4, "cleanup_at": 0.6, "land_at": 0.1},
    )
    config.run.max_turns = 60
    SIZES["chars"] = 60  # ~900 characters, about 230 tokens a turn
    with Harness(config, model=ScriptedModel(responder=decide), tools=[read_log]) as h:
        first: list[EventBase] = list(h.run_stream("read the logs"))
        second: list[EventBase] = list(h.run_stream("read more logs"))
    cleanups = [
        e
        for e in first
        if isinstance(e, CompactionEvent) and e.mode == "eviction" and e.status == "completed"
    ]
    assert len(cleanups) >= 2, "the request must fill up and empty again several times"
    snapshots = [e for e in first if e.type == "prompt_snapshot"]
    level = next(e for e in first if isinstance(e, ContextPressureEvent)).nudge_tokens
    crossings = sum(
        1
        for a, b in itertools.pairwise(snapshots)
        if a.total_tokens < level <= b.total_tokens  # type: ignore[attr-defined]
    )
    assert crossings >= 2, "the level must be crossed again after a cleanup"
    assert len([e for e in first if isinstance(e, ContextPressureEvent)]) == 1
    assert len([e for e in second if isinstance(e, ContextPressureEvent)]) == 1
    # The nudge reached exactly one request per task, and says what to do.
    with_nudge = [text for text in requests if "Context pressure:" in text]
    assert len(with_nudge) == 2
    message = next(e for e in first if isinstance(e, ContextPressureEvent)).message
    assert "condense_context" in message and "end_episode" not in message  # none active
    assert f"of {16_000} tokens" in message and "evicts completed tool exchanges" in message


def test_a_cleanup_that_would_free_less_than_15_percent_does_nothing_and_says_so_once() -> None:
    def decide(request: ModelRequest) -> ModelResponse:
        return call("read_log", index=len(request.items))

    config = base_config(
        compaction={"context_window": 40_000, "reserve_tokens": 2000},
        pruning={"enabled": False},
        pressure={"nudge_at": 0.05, "cleanup_at": 0.06, "land_at": 0.05},
    )
    config.run.max_turns = 12
    SIZES["chars"] = 30
    with Harness(config, model=ScriptedModel(responder=decide), tools=[read_log]) as h:
        events = list(h.run_stream("read"))
    evictions = [e for e in events if isinstance(e, CompactionEvent) and e.mode == "eviction"]
    assert [e.status for e in evictions] == ["skipped"]
    assert "15 % of the window" in evictions[0].reason
    assert evictions[0].tokens_before == evictions[0].tokens_after


def test_harness_check_prints_the_levels_in_force() -> None:
    from harness.assembly.checks import check_model

    with Harness(base_config(), model=ScriptedModel([], context_window=128_000)) as h:
        results = {r.subject: r.detail for r in check_model(h)}  # type: ignore[arg-type]
    assert results["pressure"].startswith("nudge at 89600 (70 %), cleanup at 102400 (80 %)")
    assert "lands at 51200 (40 %)" in results["pressure"]
    assert "window table (up to 200K)" in results["pressure"]


NUDGE_TRIES = {"examples": 0, "nudges": 0}


@settings(max_examples=examples(300), deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=40_000), min_size=1, max_size=40),
    lanes=st.lists(st.sampled_from(["main", "child_a", "child_b"]), min_size=1, max_size=40),
)
def test_the_nudge_fires_once_per_lane_at_its_first_crossing(
    sizes: list[int], lanes: list[str]
) -> None:
    """Any sequence of request sizes, taken by a main lane and sub-agent lanes over one
    context in any order: each lane is nudged once, at the first request of its own at or
    above the level, never again (oracle: the sizes and lanes alone)."""
    from types import SimpleNamespace

    from harness.context import Budget, Context
    from harness.runtime.phases.refresh import nudge
    from harness.tokens import TokenEstimator

    window = 50_000
    pressure = derive_pressure(window, 45_000, PressureConfig(nudge_at=0.4))
    assert pressure is not None
    context = Context(TokenEstimator(), Budget(window, 5_000, pressure=pressure))
    states = {name: SimpleNamespace(task_id=name, nudged=False) for name in set(lanes)}
    NUDGE_TRIES["examples"] += 1
    told: set[str] = set()
    got = 0
    for size, name in zip(sizes, itertools.cycle(lanes)):
        lane = SimpleNamespace(context=context, state=states[name], emit=lambda e: e)
        context.set_refreshed(brief="w " * size, observation="", images=[])
        expected = context.total_tokens() >= pressure.nudge_tokens and name not in told
        events = list(nudge(lane))  # type: ignore[arg-type]
        assert bool(events) == expected, (name, size)
        assert ("Context pressure:" in context.refreshed.observation) == bool(events)
        if events:
            told.add(name)
            got += 1
    assert got == len(told) <= len(states)
    NUDGE_TRIES["nudges"] += got

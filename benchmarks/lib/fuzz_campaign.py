"""What both safety fuzzers share (:mod:`benchmarks.safety_fuzz`,
:mod:`benchmarks.safety_fuzz_body`): the Harness config of a campaign, the counts of its
safety outcomes, and hypothesis drawing scenarios without shrinking.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from benchmarks.lib.fuzz_scenarios import Scenario
from harness import HarnessConfig
from harness.events import SafetyCheckEvent

__all__ = ["Tally", "campaign_config", "generate_calls", "tally_events"]


@dataclass
class Tally:
    """Counts of one campaign (or one source of it)."""

    tried: int = 0
    allowed: int = 0
    clamped: int = 0
    blocked: int = 0
    rejected: int = 0
    """Refused by the tool's own schema before the envelope saw it."""
    executed: int = 0
    escaped: int = 0
    escapes: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("tried", "allowed", "clamped", "blocked", "rejected", "executed", "escaped"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.escapes.extend(other.escapes)


def campaign_config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "failure_budget": 1000, "max_turns": 1000},
            "memory": {"enabled": False},
            "context": {"compaction": {"context_window": 1_000_000}},
        }
    )


def tally_events(events: list[Any], physical: set[str], calls: tuple[Any, ...]) -> Tally:
    tally = Tally()
    tally.tried = sum(1 for c in calls if c.tool_calls[0].name in physical)
    outcomes = Counter(e.outcome for e in events if isinstance(e, SafetyCheckEvent))
    tally.allowed, tally.clamped, tally.blocked = (
        outcomes["allow"],
        outcomes["clamp"],
        outcomes["block"],
    )
    tally.rejected = tally.tried - sum(outcomes.values())
    return tally


def generate_calls(
    strategy: st.SearchStrategy[Scenario], examples: int, seed: int, run: Callable[[Scenario], None]
) -> None:
    """Draw ``examples`` scenarios from hypothesis (no shrinking: nothing here raises)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed

    @fixed_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(scenario: Scenario) -> None:
        run(scenario)

    draw()

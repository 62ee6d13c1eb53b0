"""Pressure levels derived from the size of the context window, and the nudge they send.

Three levels, each a share of the window (:data:`WINDOW_TABLE`, the figures of the
reference design in ``seeds/001``): at **nudge** the model is told once, per crossing, that
its context is filling and which tools fix it; at **cleanup** the harness evicts by the
structure of the work (:mod:`harness.context.eviction.by_structure`); a cleanup aims to **land** at
the
lowest level. The bigger the window, the earlier it acts: quality falls well before a
large window is full. A cleanup that would free less than :data:`MIN_CLEANUP_SHARE` of the
window does nothing, so the prompt cache is never spent on a few tokens.

Levels set in ``context.pressure`` win over the table, share by share. The checkpoint
threshold (``context_window - reserve_tokens``) stays the hard ceiling: no level is above it.
A config that sets its threshold (``reserve_tokens``) and no levels gets exactly that: the
checkpoint fold at its threshold, no nudge and no cleanup before it; with levels set too,
the threshold is the cleanup level unless ``cleanup_at`` says otherwise. A cleanup evicts
first; when eviction alone cannot bring the request down to halfway between the landing
and cleanup levels, the checkpoint fold follows at once.
The reserve itself, left unset, scales down for small windows (:func:`default_reserve`).

With ``context.pressure.cache_aware`` (the default deployment's setting) the levels are
ceilings: below the cleanup level, a cleanup runs when it pays for itself at the prompt
cache's prices (:mod:`harness.context.eviction.carrying`), a rule in which the window does
not appear. The shares answer "how full may the window get before attention suffers";
the prices answer "when is evicting cheaper than carrying", which no share of the window
can (issue 43: 65 % was about right at 32k and far too late at 64k).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.config import CompactionConfig
from harness.context.eviction.carrying import CacheCost

if TYPE_CHECKING:
    from harness.config import PressureConfig

__all__ = [
    "DEFAULT_RESERVE_TOKENS",
    "MIN_CLEANUP_SHARE",
    "WINDOW_TABLE",
    "Pressure",
    "default_reserve",
    "derive_pressure",
    "nudge_text",
]

WINDOW_TABLE: tuple[tuple[int | None, float, float, float], ...] = (
    (200_000, 0.70, 0.80, 0.40),
    (500_000, 0.60, 0.70, 0.35),
    (1_000_000, 0.50, 0.60, 0.30),
    (None, 0.40, 0.50, 0.25),
)
"""(largest window, nudge at, clean up at, land at), in window-size order."""
MIN_CLEANUP_SHARE = 0.15
"""A cleanup frees at least this share of the window, or changes nothing."""
DEFAULT_RESERVE_TOKENS: int = CompactionConfig.model_fields["reserve_tokens"].default
RESERVE_WINDOW_SHARE = 4
"""An unset reserve takes at most 1/4 of the window."""


def default_reserve(window: int) -> int:
    """The reserve when ``context.compaction.reserve_tokens`` is not set: 16384 tokens, but
    at most a quarter of the window, so an 8192-token local model compacts at 6144."""
    return min(DEFAULT_RESERVE_TOKENS, window // RESERVE_WINDOW_SHARE)


@dataclass(frozen=True)
class Pressure:
    """The levels in force for one context, in tokens."""

    context_window: int
    nudge_tokens: int
    cleanup_tokens: int
    land_tokens: int
    source: str
    """Where the levels came from (``window table (up to 200K)``, ``config``, ...)."""
    cost: CacheCost | None = None
    """With ``context.pressure.cache_aware``: below the cleanup level, a cleanup runs when
    it pays for itself at these cache prices (:mod:`harness.context.eviction.carrying`);
    the levels are then ceilings."""

    @property
    def min_free_tokens(self) -> int:
        """What a cleanup must free to be worth its cache miss."""
        return int(self.context_window * MIN_CLEANUP_SHARE)

    def rescaled(self, window: int, threshold: int) -> Pressure:
        """The same shares for a smaller window (a limit the provider stated)."""

        def share(tokens: int) -> int:
            return min(threshold, tokens * window // self.context_window)

        cleanup = share(self.cleanup_tokens)
        return Pressure(
            context_window=window,
            nudge_tokens=min(share(self.nudge_tokens), cleanup),
            cleanup_tokens=cleanup,
            land_tokens=max(0, min(share(self.land_tokens), cleanup - 1)),
            source=f"{self.source}; rescaled to the stated window {window}",
            cost=self.cost,
        )

    def describe(self) -> str:
        """One line for ``harness check`` and the docs."""
        window = self.context_window

        def share(tokens: int) -> str:
            return f"{tokens} ({100 * tokens / window:.0f} %)"

        cost = f"; below it, {self.cost.describe()}" if self.cost is not None else ""
        return (
            f"nudge at {share(self.nudge_tokens)}, cleanup at {share(self.cleanup_tokens)}, "
            f"lands at {share(self.land_tokens)}, frees at least {self.min_free_tokens}"
            f"{cost} [{self.source}]"
        )


def _table_row(window: int) -> tuple[str, float, float, float]:
    for limit, nudge, cleanup, land in WINDOW_TABLE:
        if limit is None or window <= limit:
            where = f"up to {limit // 1000}K" if limit else "over 1M"
            return f"window table ({where})", nudge, cleanup, land
    raise AssertionError("the table ends with an open row")


def derive_pressure(
    window: int,
    threshold: int,
    config: PressureConfig | None,
    *,
    threshold_configured: bool = False,
) -> Pressure | None:
    """The levels for a window: the config's shares where set, else the table's; every
    level at most ``threshold`` (where the checkpoint fold starts). A configured threshold
    (``reserve_tokens`` set) is what the config asked for: without ``context.pressure``
    levels it is the only level (None: no nudge, no cleanup before the fold); with them it
    is the cleanup level unless ``cleanup_at`` is set too. None when disabled."""
    if config is not None and not config.enabled:
        return None
    explicit = [] if config is None else [config.nudge_at, config.cleanup_at, config.land_at]
    cost = (
        CacheCost(config.cache_read_price, config.cache_write_price)
        if config is not None and config.cache_aware
        else None
    )
    if threshold_configured and cost is None and all(value is None for value in explicit):
        return None
    source, nudge, cleanup, land = _table_row(window)
    if config is not None:
        if any(value is not None for value in explicit):
            source = "config" if all(v is not None for v in explicit) else f"config + {source}"
        nudge = config.nudge_at if config.nudge_at is not None else nudge
        cleanup = config.cleanup_at if config.cleanup_at is not None else cleanup
        land = config.land_at if config.land_at is not None else land
    cleanup_tokens = min(int(window * cleanup), threshold)
    if threshold_configured and (config is None or config.cleanup_at is None):
        cleanup_tokens = threshold
        source += "; cleanup at the configured compaction threshold"
    elif cleanup_tokens < int(window * cleanup):
        source += f"; cleanup capped at the compaction threshold {threshold}"
    nudge_tokens = min(int(window * nudge), cleanup_tokens)
    land_tokens = min(int(window * land), cleanup_tokens - 1)
    return Pressure(
        context_window=window,
        nudge_tokens=nudge_tokens,
        cleanup_tokens=cleanup_tokens,
        land_tokens=max(0, land_tokens),
        source=source,
        cost=cost,
    )


def nudge_text(pressure: Pressure, tokens: int, *, active_episodes: list[str]) -> str:
    """The one short message a crossing of the nudge level adds to the next request: the
    pressure, the tools that relieve it, and what the harness does otherwise."""
    window = pressure.context_window
    active = (
        f" First end your active episode(s) {', '.join(active_episodes)} with end_episode."
        if active_episodes
        else ""
    )
    return (
        f"Context pressure: the request uses about {tokens} of {window} tokens "
        f"({100 * tokens / window:.0f} %).{active} At a milestone, call condense_context with "
        "what you learned (completed work, outcomes, open questions, archive:// references) "
        f"to free room yourself. Otherwise at {pressure.cleanup_tokens} tokens the harness "
        "evicts completed tool exchanges and episodes (their addresses stay), and at the "
        "compaction threshold it folds older turns into a checkpoint."
    )

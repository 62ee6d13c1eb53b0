"""Where a session's context window comes from, and the empty context built on it.

Every compaction threshold is derived from the window, so it is resolved in one place and
an unknown window is an error, never a guess.
"""

from __future__ import annotations

from harness.config import HarnessConfig, chose
from harness.context.eviction.pressure import default_reserve, derive_pressure
from harness.context.model import Budget, Context
from harness.errors import ConfigError, UnknownContextWindowError
from harness.providers.base import Model
from harness.providers.catalog import known_context_window
from harness.tokens import TokenEstimator

__all__ = [
    "configured_reserve",
    "lane_budget",
    "new_context",
    "reserve_configured",
    "resolve_context_window",
]


def resolve_context_window(config: HarnessConfig, model: Model) -> int:
    """The one place the window comes from: compaction config, model config, the model
    object, then the built-in table. Unknown is an error, never a guess."""
    candidates = (
        config.context.compaction.context_window,
        config.model.context_window,
        getattr(model, "context_window", None),
        known_context_window(getattr(model, "name", "") or config.model.name),
    )
    for value in candidates:
        if value:
            return int(value)
    raise UnknownContextWindowError(
        f"the context window of model {model.name!r} is unknown; set model.context_window "
        "(or context.compaction.context_window) in the config, or pass --context-window N "
        "on the command line",
        key="model.context_window",
        value=None,
    )


def new_context(config: HarnessConfig, model: Model) -> Context:
    """An empty context for ``model``, its budget derived from the window (or an error
    naming the key when a configured reserve leaves no room)."""
    budget = _budget(config, resolve_context_window(config, model), "context window")
    return Context(TokenEstimator(image_cost=getattr(model, "image_cost", "generic")), budget)


def _budget(config: HarnessConfig, window: int, what: str) -> Budget:
    """The budget over ``window`` with its pressure levels, or the error naming the reserve
    when a configured one leaves no room."""
    reserve = configured_reserve(config, window)
    if reserve >= window:
        raise ConfigError(
            f"context.compaction.reserve_tokens: got {reserve}; expected less than the "
            f"{what} ({window})",
            key="context.compaction.reserve_tokens",
            value=reserve,
        )
    pressure = derive_pressure(
        window,
        window - reserve,
        config.context.pressure,
        threshold_configured=reserve_configured(config),
    )
    return Budget(context_window=int(window), reserve_tokens=reserve, pressure=pressure)


def reserve_configured(config: HarnessConfig) -> bool:
    """Whether the config chose its own reserve (:func:`harness.config.chose`)."""
    return chose(config.context.compaction, "reserve_tokens")


def configured_reserve(config: HarnessConfig, window: int) -> int:
    """``context.compaction.reserve_tokens`` as the config chose it, else the default
    scaled to the window (:func:`~harness.context.eviction.pressure.default_reserve`)."""
    if reserve_configured(config):
        return config.context.compaction.reserve_tokens
    return default_reserve(window)


def lane_budget(config: HarnessConfig, model: Model, window: int | None) -> Budget:
    """The budget of a sub-agent lane on its own model (``subagents.model``): the window
    configured for it, the model's own, or the built-in table's; unknown is an error, as
    for the main model (a wrong guess would misplace every compaction threshold)."""
    resolved = (
        window
        or getattr(model, "context_window", None)
        or known_context_window(getattr(model, "name", ""))
    )
    if not resolved:
        raise UnknownContextWindowError(
            f"the context window of the sub-agents' model {model.name!r} is unknown; set "
            "subagents.model.context_window in the config",
            key="subagents.model.context_window",
            value=None,
        )
    return _budget(config, int(resolved), "sub-agents' context window")

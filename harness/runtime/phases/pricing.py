"""What a model call cost: usage priced from the configured prices, usage the provider did
not report, and the usage of requests the loop answered but does not use.

Every request the server answered is counted in the task's usage, whether its answer is
used, cut, retried or rejected. Kept apart from :mod:`~harness.runtime.phases.decide` so
the arithmetic of cost reads in one place.
"""

from __future__ import annotations

from harness.config import PriceConfig
from harness.messages import ModelResponse, Usage
from harness.runtime.lane import Lane

__all__ = ["count_spent", "priced", "priced_usage", "usage_unreported"]


def count_spent(lane: Lane, usage: Usage | None) -> None:
    """Usage of a request the server answered but the loop does not use (a probe, a
    retried attempt, the answer of a call that failed): counted, never lost."""
    if usage is not None and usage.requests:
        lane.state.add_usage(priced_usage(usage, lane.model_config.prices))


def priced(response: ModelResponse, prices: PriceConfig | None) -> ModelResponse:
    """The response with its cost filled in from the configured prices (per million)."""
    usage = priced_usage(response.usage, prices)
    if usage is response.usage:
        return response
    return response.model_copy(update={"usage": usage})


def priced_usage(usage: Usage, prices: PriceConfig | None) -> Usage:
    """``usage`` with its cost filled in from the configured prices (per million)."""
    if prices is None or usage.cost_usd is not None:
        return usage
    cache_read = prices.cache_read if prices.cache_read is not None else prices.input * 0.1
    cache_write = prices.cache_write if prices.cache_write is not None else prices.input * 1.25
    cost = (
        usage.input_tokens * prices.input
        + usage.output_tokens * prices.output
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
    ) / 1e6
    return usage.model_copy(update={"cost_usd": cost})


def usage_unreported(response: ModelResponse) -> ModelResponse:
    """The provider sent no usage: one request whose tokens are unknown (never 0/0)."""
    usage = response.usage.model_copy(
        update={"requests": max(1, response.usage.requests), "unreported_requests": 1}
    )
    return response.model_copy(update={"usage": usage})

"""Why a request cannot fit: the numbers every named budget error gives.

The compactor raises :class:`~harness.errors.ContextBudgetError` with this text when
nothing it may do brings the request under the input budget, and the overflow recovery
ends a task with it when the provider keeps rejecting the smallest request the harness can
build. Both say the same thing the same way: what the request needs, what the budget is,
which part can never shrink, and what to change.
"""

from __future__ import annotations

from harness.context.model import Context

__all__ = ["budget_error"]


def budget_error(context: Context, *, overflow: str | None = None) -> str:
    """The explanation, section by section; ``overflow`` is the provider's message when
    it rejected the request although the estimate said it fits."""
    budget = context.budget
    sections = context.sections()
    fixed = sections["resident"] + sections["tools"] + sections["refreshed"]
    after = context.total_tokens()
    parts = [
        f"the request needs about {after} tokens after compaction"
        + (f" (the provider reported an overflow: {overflow})" if overflow is not None else "")
        + f"; the input budget is {budget.threshold} tokens (window "
        f"{budget.context_window} - reserve {budget.reserve_tokens})",
        f"resident {sections['resident']} + tool definitions {sections['tools']} + "
        f"refreshed {sections['refreshed']} + images {sections['images']} tokens are "
        "never compacted",
        f"Accumulated is {sections['accumulated']} tokens in {len(context.accumulated)} "
        "items (checkpoint, the instruction and other protected items, current Task Notes "
        "and the retained turns, already shrunk)",
    ]
    if fixed + sections["images"] >= budget.threshold:
        parts.append(
            "the fixed part alone exceeds the budget: load fewer skills or tools, shorten "
            "memory or the profile, or send smaller images"
        )
    else:
        parts.append(
            "lower context.compaction.keep_recent_tokens, or use a model with a larger window"
        )
    return "; ".join(parts)

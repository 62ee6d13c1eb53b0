"""When a cleanup pays for itself: the prompt cache's prices decide, not a share of the window.

A provider's prompt cache bills a token it serves from the cache at ``r`` (Anthropic: 0.1
of an uncached input token) and a token it writes at ``w`` (1.25). So a token a cleanup
could evict costs ``r`` on every request that carries it, and a cleanup costs ``w - r``
more than carrying on every token after the first item it changes: about all of
Accumulated that stays. Nothing else is at stake in *when* to clean up.

With Accumulated growing ``g`` tokens a turn above what the last cleanup left (the base,
``B``), the cheapest rhythm is the economic order quantity's: clean up once the carrying
cost paid since the last cleanup, ``r * sum(A_t - B)``, reaches the cost of the rewrite,
``(w - r) * R`` (``R``: the tokens a cleanup rewrites, at most ``B``). The gap between
cleanups is then ``sqrt(2 (w - r) / r * R * g)`` tokens, and the window is not in it: with
the prices above, ``R`` = 8k and ``g`` = 400 tokens a turn it is about 8.6k, in a 24k
window and in a 1M one. A share of the window is right for one window only: 65 % of 64k let
every request carry some 20k tokens that were paid again and again (issue 43).

The trigger says a cleanup may pay; the plan decides. A plan that frees ``f`` tokens and
rewrites ``R`` is applied when ``r * f * n >= (w - r) * R``, ``n`` being the requests
since the last cleanup (the cycle just seen is the estimate of the next). A plan not worth
it changes nothing; what it would have left becomes the base, so the next attempt waits
for a cycle of real growth. A context that shrank by other means (a checkpoint fold, a
task's end, ``condense_context``) restarts the count from where it is.

What eviction leaves behind (one-line references, records, the rolling summary) raises
the base cycle after cycle; only a checkpoint fold removes it. The same reasoning, one level
up, says when: fold once the residue (the base above what the last fold left, ``F``) has
cost, carried request after request, what a fold costs: the summarizer reading the residue
(uncached input, price 1) plus the rewrite of what the fold leaves, ``(w - r) * F``. A fold
that fails is not asked for again until the residue has cost that much once more.

The window's levels stay the ceilings (:mod:`harness.context.eviction.pressure`): the
nudge, the forced cleanup with its checkpoint fold, and the compaction threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CacheCost", "CarryingCost"]


@dataclass(frozen=True)
class CacheCost:
    """The provider's prompt-cache prices, per token, relative to an uncached input token."""

    read_price: float = 0.1
    write_price: float = 1.25

    @property
    def rewrite_premium(self) -> float:
        """What a rewritten token costs beyond carrying it: ``w - r``."""
        return self.write_price - self.read_price

    def describe(self) -> str:
        return (
            f"cleans up when carrying evictable tokens (x{self.read_price:g} a request) has "
            f"cost what rewriting the cache costs (x{self.write_price:g})"
        )


@dataclass
class CarryingCost:
    """One context's account of the carrying cost since its last cleanup (see the module
    docstring); fed the Accumulated tokens before every model call."""

    prices: CacheCost
    base: int | None = None
    """Accumulated tokens a cleanup leaves: the last landing, or the lowest seen since."""
    kept_prefix: int = 0
    """Tokens before the first item the last cleanup changed: cached, never rewritten."""
    held: float = 0.0
    """Carrying cost of the tokens above ``base`` since the last cleanup."""
    requests: int = 0
    """Requests since the last cleanup."""
    fold_base: int | None = None
    """Accumulated tokens after the last fold (the lowest seen since)."""
    residue_held: float = 0.0
    """Carrying cost of the base above ``fold_base`` since then."""
    checkpoint: str | None = None
    """The id of the checkpoint item last seen (a new one: a fold happened)."""

    def observe(self, accumulated: int, *, checkpoint: str | None = None) -> bool:
        """Account for one request of ``accumulated`` tokens, whose checkpoint item (if
        any) has the id ``checkpoint``; True when the carrying cost has reached the
        estimated cost of a rewrite (a plan is worth making). A new checkpoint means a
        fold (or a task's end) happened: the residue starts again from here."""
        if checkpoint != self.checkpoint or self.fold_base is None:
            self.checkpoint = checkpoint
            self.fold_base, self.residue_held = accumulated, 0.0
        if self.base is None or accumulated < self.base:
            # something else shrank the context (a fold rewrites it whole): no prefix is
            # known to stay cached, so the next cleanup is assumed to rewrite all of it
            self._restart(accumulated, kept_prefix=0)
            self.fold_base = min(self.fold_base, accumulated)
            return False
        self.requests += 1
        self.held += self.prices.read_price * (accumulated - self.base)
        self.residue_held += self.prices.read_price * self.residue()
        return self.held >= self.prices.rewrite_premium * self.rewrite_estimate()

    def residue(self) -> int:
        """The base above what the last fold left: what only a fold removes."""
        return max(0, (self.base or 0) - (self.fold_base or 0))

    def fold_cost(self) -> float:
        """A fold's price: the summarizer reads the residue, the cache rewrites the rest."""
        return self.residue() + self.prices.rewrite_premium * (self.fold_base or 0)

    def fold_due(self) -> bool:
        """True (once per such cycle) when carrying the residue has cost what a fold costs."""
        if self.residue() <= 0 or self.residue_held < self.fold_cost():
            return False
        self.residue_held = 0.0  # a failed fold waits for another such cycle
        return True

    def rewrite_estimate(self) -> int:
        """The tokens the next cleanup is expected to rewrite: what follows the prefix the
        last one kept (at least one token, so an empty context never looks free)."""
        return max(1, (self.base or 0) - self.kept_prefix)

    def min_free(self, rewritten: int) -> int:
        """What a plan that rewrites ``rewritten`` tokens must free to pay for itself over
        one more cycle as long as the last: ``(w - r) * R / (r * n)``."""
        cycle = max(1, self.requests)
        return int(self.prices.rewrite_premium * rewritten / (self.prices.read_price * cycle)) + 1

    def worth(self, *, freed: int, rewritten: int) -> bool:
        return freed >= self.min_free(rewritten)

    def applied(self, accumulated: int, *, kept_prefix: int) -> None:
        """A cleanup landed at ``accumulated`` tokens, unchanged before ``kept_prefix``."""
        self._restart(accumulated, kept_prefix=kept_prefix)

    def declined(self, leaves: int, *, kept_prefix: int) -> None:
        """A plan was not worth it: ``leaves`` (what it would have left) is the new base,
        and its own prefix, ``kept_prefix``, says what the next one will rewrite."""
        self._restart(leaves, kept_prefix=kept_prefix)

    def _restart(self, base: int, *, kept_prefix: int) -> None:
        self.base = base
        self.kept_prefix = min(kept_prefix, base)
        self.held = 0.0
        self.requests = 0

"""What every backend shares: the queue of episodes, and what happens when a worker dies.

A backend asks :meth:`Dispatch.take` for the next episode whenever one of its workers is
idle, and reports back exactly once per episode it took: :meth:`Dispatch.finished` with the
record, or :meth:`Dispatch.lost` when the worker died under it. A lost episode goes back to
the front of the queue for another worker, up to ``max_attempts`` starts in all; after
that it is recorded as an ``error``, so an eval always ends, and no finished episode is
ever run again.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable

from harness.fleet.episode import EpisodeRecord, EpisodeSpec

__all__ = ["Dispatch"]

logger = logging.getLogger("harness.fleet")


class Dispatch:
    """The episodes of one eval run (see the module docstring)."""

    def __init__(
        self,
        specs: Iterable[EpisodeSpec],
        *,
        max_attempts: int,
        finish: Callable[[EpisodeRecord], None],
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.pending: deque[EpisodeSpec] = deque(specs)
        self.max_attempts = max_attempts
        self._finish = finish
        self.running: dict[str, EpisodeSpec] = {}
        self.stopping = False
        self.lost_count = 0

    @property
    def total(self) -> int:
        return len(self.pending) + len(self.running)

    @property
    def done(self) -> bool:
        """Nothing is running and nothing more will be handed out."""
        return not self.running and (self.stopping or not self.pending)

    def take(self) -> EpisodeSpec | None:
        """The next episode for an idle worker (None: nothing to hand out)."""
        if self.stopping or not self.pending:
            return None
        spec = self.pending.popleft()
        self.running[spec.plan.key] = spec
        return spec

    def finished(self, record: EpisodeRecord) -> None:
        """A worker finished an episode it took."""
        self.running.pop(record.key, None)
        self._finish(record)

    def lost(self, spec: EpisodeSpec, reason: str, *, worker: str = "") -> None:
        """The worker running ``spec`` died: try it again elsewhere, or record the error."""
        self.running.pop(spec.plan.key, None)
        self.lost_count += 1
        if spec.attempt < self.max_attempts and not self.stopping:
            logger.warning(
                "worker %s died running %s (attempt %d of %d): %s; trying it again",
                worker or "?",
                spec.plan.key,
                spec.attempt,
                self.max_attempts,
                reason,
            )
            self.pending.appendleft(spec.model_copy(update={"attempt": spec.attempt + 1}))
            return
        self._finish(
            EpisodeRecord.of(
                spec.plan,
                status="error",
                error=f"the worker died {spec.attempt} time(s) running it; last: {reason}",
                worker=worker,
                attempt=spec.attempt,
                interrupted=self.stopping,
            )
        )

    def stop(self) -> None:
        """Hand out nothing more (Ctrl-C): running episodes still report back."""
        self.stopping = True

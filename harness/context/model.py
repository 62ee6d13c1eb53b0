"""The Context: three lifetimes kept apart, assembled into one request per turn.

- **Resident**: system prompt, embodiment profile, skill catalog, memory, loaded skill
  bodies, and the tool definitions. Assembled first and kept byte-identical from turn to
  turn unless a skill is loaded or memory changes, so provider prompt caches hit.
- **Accumulated**: instructions, revisions, Task Notes snapshots, model responses and
  compact tool results. The only part that grows, and the only part compaction touches.
- **Refreshed**: the scene Brief and the current observation, replaced before every model
  decision and placed last. Transient images (the previous tool result's, the
  instruction's) ride here for exactly one call and then leave.

Every Accumulated item has a cached token estimate and a state (verbatim, truncated,
pruned, summarized) with the reason it changed, for introspection. What the context
remembers of items that left it is bounded (:data:`RETIRED_KEPT`): a session of any length
holds the same memory; the run store keeps every item and state change.

A sub-agent's lane works in a **child view** (:meth:`Context.child`): its own Accumulated,
Refreshed, transient images and tool definitions, over the parent's Resident blocks read
through (the very same block objects, so the child's request starts with the parent's
prefix byte for byte and the provider's prompt cache serves it). Blocks the child adds
(a skill it loads) are its own and never reach the parent.

The context's token accounting lives in :mod:`harness.context.sizes` (a
:class:`~harness.context.sizes.ContextSizes` each :class:`Context` owns), and the bounding
of long text in :mod:`harness.context.bounds`; both are re-exported here
(``ITEM_OVERHEAD_TOKENS``, ``bounded_text``, ``redacted_by``).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.context.bounds import bounded_text, redacted_by
from harness.context.episodes.ledger import EpisodeLedger
from harness.context.episodes.marks import EpisodeBook
from harness.context.eviction.pressure import Pressure
from harness.context.sizes import ITEM_OVERHEAD_TOKENS, ContextSizes
from harness.messages import (
    ImagePart,
    Item,
    ModelRequest,
    RefreshedBlock,
    SystemBlock,
    TaskNotesItem,
    ToolSpec,
)
from harness.tokens import TokenEstimator

__all__ = [
    "ITEM_OVERHEAD_TOKENS",
    "RESIDENT_ORDER",
    "RETIRED_KEPT",
    "Budget",
    "Context",
    "ItemState",
    "ItemStatus",
    "RetiredItem",
    "bounded_text",
    "redacted_by",
]

ItemStatus = Literal["verbatim", "truncated", "pruned", "summarized", "shrunk"]

RESIDENT_ORDER: tuple[str, ...] = (
    "system",
    "embodiment",
    "skills",
    "memory",
    "tool_sources",
    "skill:",
)
"""Resident blocks are ordered most-stable first; loaded skill bodies (``skill:NAME``) last,
so loading one mid-task leaves the cached prefix before it intact."""

RETIRED_KEPT = 512
"""Items that left Accumulated whose kind and state the context still remembers (the
newest ones); the run store keeps them all (``harness context --turn``)."""


@dataclass(frozen=True)
class Budget:
    """The numbers every compaction decision reads (derived once from the window)."""

    context_window: int
    reserve_tokens: int
    pressure: Pressure | None = None
    """The nudge and cleanup levels (:mod:`harness.context.eviction.pressure`); None: only the
    checkpoint threshold applies."""

    @property
    def threshold(self) -> int:
        """Compaction triggers when the estimated request reaches this."""
        return self.context_window - self.reserve_tokens


@dataclass
class ItemState:
    status: ItemStatus = "verbatim"
    reason: str = ""
    original_tokens: int = 0
    replaced_by: str | None = None
    """Id of the rewritten copy (pruned or shrunk) that stands in for this item."""


@dataclass(frozen=True)
class RetiredItem:
    """What introspection still knows about an item that has left Accumulated."""

    kind: str
    task_id: str
    turn: int


@dataclass
class TransientParts:
    images: list[ImagePart] = field(default_factory=list)


def _resident_rank(block: SystemBlock) -> int:
    for index, key in enumerate(RESIDENT_ORDER):
        if block.name == key or (key.endswith(":") and block.name.startswith(key)):
            return index
    return len(RESIDENT_ORDER)


class Context:
    """Resident, Refreshed and Accumulated context of one session (or, made by
    :meth:`child`, of one sub-agent lane over its parent's Resident blocks)."""

    def __init__(
        self, estimator: TokenEstimator, budget: Budget, *, parent: Context | None = None
    ) -> None:
        self.estimator = estimator
        self.budget = budget
        self.parent = parent
        """The context whose Resident blocks this one reads through (None: its own)."""
        self._resident: dict[str, SystemBlock] = {}
        self._tools: list[ToolSpec] = []
        self._accumulated: list[Item] = []
        self.states: dict[str, ItemState] = {}
        self.refreshed = RefreshedBlock()
        self._transient = TransientParts()
        self.sizes = ContextSizes(self)
        """The token accounting of this context (its own part; the methods below that
        give sizes read it)."""
        self._sent_count = 0
        """Items in the previous request."""
        self._dirty_from = 0
        """First Accumulated index changed since the previous request."""
        self._new_items: list[Item] = []
        self._changed_states: set[str] = set()
        self.retired: OrderedDict[str, RetiredItem] = OrderedDict()
        """Items that left Accumulated, oldest first (the newest :data:`RETIRED_KEPT`)."""
        self.retired_forgotten = 0
        """Items that left so long ago that only the run store still knows them."""
        self.images_visible = True
        """False once the model is known not to see images (``model.vision: false`` or a
        failed probe): frames are then not counted against the budget."""
        self.episodes = EpisodeBook()
        """The episodes of this context's tasks (``begin_episode`` / ``end_episode``)."""
        self.episode_ledger = EpisodeLedger()
        """What the episode tools spent and saved so far (whether a task offers them)."""
        self.version = 0
        """Bumped by every change to Accumulated: a model condensation planned at one
        version is stale at another (:mod:`harness.context.compaction.folds`)."""

    def child(
        self, *, budget: Budget | None = None, estimator: TokenEstimator | None = None
    ) -> Context:
        """A child view for a sub-agent lane: empty Accumulated and Refreshed, no tools yet,
        and this context's Resident blocks shared (read through, never copied).

        ``budget`` and ``estimator`` default to this context's (the same model); a lane on
        another model passes its own window and estimator."""
        return Context(estimator or self.estimator, budget or self.budget, parent=self)

    # ------------------------------------------------------------------ sizes
    # (the accounting is ``self.sizes``: harness.context.sizes)

    def item_tokens(self, item: Item) -> int:
        """Raw (uncalibrated) text estimate of one item, cached by item id."""
        return self.sizes.item_tokens(item)

    def resident_tokens(self) -> int:
        return self.sizes.resident_tokens()

    def tools_tokens(self) -> int:
        return self.sizes.tools_tokens()

    def accumulated_tokens(self, items: Iterable[Item] | None = None) -> int:
        """Raw tokens of Accumulated (a running total), or of the given items."""
        return self.sizes.accumulated_tokens(items)

    def refreshed_tokens(self) -> tuple[int, int]:
        """(text tokens, image tokens) of what Refreshed will carry on the next call."""
        return self.sizes.refreshed_tokens()

    def sections(self, *, accumulated: Iterable[Item] | None = None) -> dict[str, int]:
        """Calibrated token estimate per section of the next request."""
        return self.sizes.sections(accumulated=accumulated)

    def total_tokens(self, *, accumulated: Iterable[Item] | None = None) -> int:
        """Estimated size of the next request (the sum of :meth:`sections`): the prompt
        snapshot, the compaction trigger, pruning and every budget check read it."""
        return self.sizes.total_tokens(accumulated=accumulated)

    def fixed_tokens(self) -> int:
        """Everything but Accumulated: what compaction can never reduce."""
        return self.sizes.fixed_tokens()

    # ------------------------------------------------------------------ resident

    def set_resident(self, name: str, text: str) -> bool:
        """Set a Resident block; returns True if the Resident prefix changed.

        In a child view the block is the child's own; a block the parent already has with
        the same text changes nothing."""
        if not text:
            return self.remove_resident(name)
        current = self._resident.get(name)
        if current is None and self.parent is not None:
            current = self.parent._merged_resident().get(name)
        if current is not None and current.text == text:
            return False
        self._resident[name] = SystemBlock(name=name, text=text)
        self.sizes.resident_changed()
        return True

    def remove_resident(self, name: str) -> bool:
        """Remove a Resident block of this context's own (a child view never removes its
        parent's blocks)."""
        removed = self._resident.pop(name, None) is not None
        if removed:
            self.sizes.resident_changed()
        return removed

    def remove_resident_prefix(self, prefix: str) -> list[str]:
        names = [name for name in self._resident if name.startswith(prefix)]
        for name in names:
            self.remove_resident(name)
        return names

    def _merged_resident(self) -> dict[str, SystemBlock]:
        """The parent's blocks (read through, recursively), then this context's own, in
        insertion order; an own block of the same name stands in for the parent's."""
        if self.parent is None:
            return self._resident
        merged = dict(self.parent._merged_resident())
        merged.update(self._resident)
        return merged

    def resident_blocks(self) -> list[SystemBlock]:
        # Stable sort: within one rank, insertion order (load order for skills) is kept,
        # and a child's own skills come after the parent's.
        return sorted(self._merged_resident().values(), key=_resident_rank)

    def has_resident(self, name: str) -> bool:
        return name in self._merged_resident()

    def set_tools(self, specs: Sequence[ToolSpec]) -> None:
        self._tools = list(specs)
        self.sizes.tools_set(self._tools)

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def resident_hash(self) -> str:
        """Hash of the exact Resident prefix (system blocks and tool definitions)."""
        digest = hashlib.sha256()
        for block in self.resident_blocks():
            digest.update(block.name.encode())
            digest.update(b"\0")
            digest.update(block.text.encode())
            digest.update(b"\0")
        for spec in self._tools:
            digest.update(spec.model_dump_json().encode())
        return digest.hexdigest()[:16]

    # ------------------------------------------------------------------ accumulated

    @property
    def accumulated(self) -> list[Item]:
        """The Accumulated items in order. Read-only: change them through ``append`` and
        ``replace`` so token totals and the cache-stable prefix stay right."""
        return self._accumulated

    @property
    def stable_items(self) -> int:
        """Leading Accumulated items unchanged since the previous request: what a provider's
        prompt cache still serves. Changing an item at or after ``stable_items - 1`` costs
        no cache write the next request would not pay anyway."""
        return min(self._sent_count, self._dirty_from)

    def append(self, item: Item) -> Item:
        self.version += 1
        self._accumulated.append(item)
        tokens = self.sizes.appended(item)
        self.states[item.id] = ItemState(original_tokens=tokens)
        return item

    def replace(self, new_items: list[Item], *, states: dict[str, ItemState] | None = None) -> None:
        """Swap in a new Accumulated list (the compactor's single write path).

        Items that disappear keep their state entry for introspection; new or rewritten
        items get the given states.
        """
        self.version += 1
        kept = {item.id for item in new_items}
        self._retire(item for item in self._accumulated if item.id not in kept)
        first_change = next(
            (
                index
                for index, (old, new) in enumerate(zip(self._accumulated, new_items, strict=False))
                if old.id != new.id
            ),
            min(len(self._accumulated), len(new_items)),
        )
        self._dirty_from = min(self._dirty_from, first_change)
        self._accumulated = list(new_items)
        self.sizes.recount(self._accumulated)
        for item in self._accumulated:
            if item.id not in self.states:
                self.states[item.id] = ItemState(original_tokens=self.item_tokens(item))
                self._new_items.append(item)
        for item_id, state in (states or {}).items():
            self.states[item_id] = state
            self._changed_states.add(item_id)
        self._forget_old()

    def changed_state(
        self, item: Item, status: ItemStatus, reason: str, *, replaced_by: str | None = None
    ) -> ItemState:
        """The state for ``item`` (or a copy standing in for it) after a change, keeping
        the token cost it had before its first change."""
        previous = self.states.get(item.id, ItemState())
        return ItemState(
            status=status,
            reason=reason,
            original_tokens=previous.original_tokens or self.item_tokens(item),
            replaced_by=replaced_by,
        )

    def set_state(self, item_id: str, status: ItemStatus, reason: str) -> None:
        state = self.states.setdefault(item_id, ItemState())
        state.status = status
        state.reason = reason
        self._changed_states.add(item_id)

    def drain_changes(self) -> tuple[list[Item], dict[str, ItemState]]:
        """Items created and states changed since the last drain (for the run store)."""
        new_items, self._new_items = self._new_items, []
        changed = {item_id: self.states[item_id] for item_id in self._changed_states}
        self._changed_states = set()
        self._forget_old()
        return new_items, changed

    def _retire(self, items: Iterable[Item]) -> None:
        for item in items:
            self.retired[item.id] = RetiredItem(item.kind, item.task_id, item.turn)
            self.sizes.retired(item)

    def _forget_old(self) -> None:
        """Forget the oldest departed items beyond :data:`RETIRED_KEPT` (never one whose
        state change the run store has not been given yet)."""
        while len(self.retired) > RETIRED_KEPT:
            item_id = next(iter(self.retired))
            if item_id in self._changed_states:
                return
            del self.retired[item_id]
            self.states.pop(item_id, None)
            self.retired_forgotten += 1

    def clear_accumulated(self) -> None:
        self.version += 1
        self._retire(self._accumulated)
        self._forget_old()
        self._accumulated = []
        self.sizes.recount(())
        self._sent_count = 0
        self._dirty_from = 0

    def latest_task_notes(self) -> TaskNotesItem | None:
        for item in reversed(self.accumulated):
            if isinstance(item, TaskNotesItem):
                return item
        return None

    # ------------------------------------------------------------------ refreshed

    def set_refreshed(self, *, brief: str, observation: str, images: Iterable[ImagePart]) -> None:
        """Replace the Refreshed block (transient images are added at request time)."""
        self.refreshed = RefreshedBlock(brief=brief, observation=observation, images=list(images))

    def add_transient_images(self, images: Iterable[ImagePart]) -> None:
        """Images shown to the next model call only (tool-result and instruction images)."""
        self._transient.images.extend(images)

    @property
    def transient_images(self) -> list[ImagePart]:
        """Images the next model call carries once (tool-result and instruction images)."""
        return list(self._transient.images)

    def consume_transient(self) -> int:
        """Called after a model call: transient images leave the context."""
        count = len(self._transient.images)
        self._transient.images = []
        return count

    # ------------------------------------------------------------------ assembly

    def build_request(self, *, max_output_tokens: int | None = None) -> ModelRequest:
        """Assemble Resident, then Accumulated, then Refreshed (with transient images)."""
        refreshed = self.refreshed
        if self._transient.images:
            refreshed = refreshed.model_copy(
                update={"images": [*self._transient.images, *refreshed.images]}
            )
        stable = min(self._sent_count, self._dirty_from)
        self._sent_count = self._dirty_from = len(self._accumulated)
        has_refreshed = bool(refreshed.brief or refreshed.observation or refreshed.images)
        # Every part is an already-validated frozen model: construct without re-validating
        # the whole history each turn (that cost grew with the session's length).
        return ModelRequest.model_construct(
            system=self.resident_blocks(),
            tools=list(self._tools),
            items=list(self._accumulated),
            refreshed=refreshed if has_refreshed else None,
            stable_items=stable,
            max_output_tokens=max_output_tokens,
            purpose="decide",
        )

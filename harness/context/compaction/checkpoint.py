"""Writing the one rolling checkpoint: its header, note, index and metadata, and the fold.

A session has at most one live :class:`~harness.messages.CheckpointItem`. Every fold
(model-written or deterministic, and the fold of an ended task's traffic) writes an
updated one that replaces it:

- the text is a one-line header the harness writes, the note (the summarizer's, or the
  deterministic one), and the harness's address index (:mod:`harness.context.compaction.index`),
  extended with every exchange this fold took;
- the metadata covers the union: turns, tasks, items folded, rounds, every writer;
- the previous checkpoint's exact text is archived under its own address first, and the
  header names that address, so every earlier version stays readable.

The checkpoint takes the place of the last item it folds: protected items (the running
task's instruction and revisions, earlier tasks' prose) stay where they were, before it,
so the request prefix up to them survives the fold byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.context.compaction.archive import archive_item_text
from harness.context.compaction.index import (
    INDEX_HEADING,
    INLINE_ENTRIES,
    AddressIndex,
    IndexState,
    index_entries,
)
from harness.context.model import Context, ItemState
from harness.messages import CheckpointItem, CheckpointSource, Item, ToolResultItem, new_id

if TYPE_CHECKING:
    from harness.context.compaction.summary_input import SummaryInput
    from harness.protocols import RunStore

__all__ = ["CheckpointWriter", "live_checkpoint", "note_of", "span"]

HEADER_PREFIX = "[Checkpoint"


def live_checkpoint(items: Sequence[Item]) -> CheckpointItem | None:
    """The checkpoint among ``items`` (there is at most one)."""
    return next((item for item in items if isinstance(item, CheckpointItem)), None)


def note_of(checkpoint: CheckpointItem | None) -> str:
    """The note of a checkpoint: its text without the harness's header and index."""
    if checkpoint is None:
        return ""
    text = checkpoint.text
    if text.startswith(HEADER_PREFIX):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    head, found, _ = text.rpartition(INDEX_HEADING)
    return (head if found else text).strip()


def _index_state(checkpoint: CheckpointItem | None) -> IndexState:
    if checkpoint is None:
        return IndexState()
    source = checkpoint.source
    _, found, section = checkpoint.text.rpartition(INDEX_HEADING)
    newest: tuple[str, ...] = ()
    if found and "Newest folded entries:" in section:
        tail = section.split("Newest folded entries:", 1)[1]
        newest = tuple(line for line in tail.split("\n") if line.startswith("- "))
    return IndexState(
        pages=tuple(source.index),
        exchanges=source.exchanges,
        unindexed=source.unindexed,
        newest=newest,
    )


def span(items: Sequence[Item]) -> str:
    """``task_ab t3-t57, task_cd t0-t4`` for the items a checkpoint covers."""
    turns: dict[str, list[int]] = {}
    for item in items:
        turns.setdefault(item.task_id or "session", []).append(item.turn)
    spans = [f"{task} t{min(t)}-t{max(t)}" for task, t in turns.items()]
    if len(spans) > 4:
        spans = [*spans[:2], f"... {len(spans) - 3} more tasks ...", spans[-1]]
    return ", ".join(spans)


class CheckpointWriter:
    """Builds the updated checkpoint for one fold and swaps it into the context."""

    def __init__(self, store: RunStore | None, render: SummaryInput) -> None:
        self.store = store
        self.render = render

    def index_for(
        self, folded: Sequence[Item], *, checkpoint_id: str, inline: int = INLINE_ENTRIES
    ) -> tuple[CheckpointItem | None, IndexState]:
        """The previous checkpoint among ``folded`` and the index extended with the rest
        (its newest ``inline`` entries shown in the checkpoint)."""
        previous = live_checkpoint(folded)
        entries = index_entries(
            [item for item in folded if item is not previous],
            store=self.store,
            clean=self.render.clean,
        )
        owner = folded[-1].task_id
        index = AddressIndex(self.store, inline=inline).extend(
            _index_state(previous), entries, task_id=owner, key=checkpoint_id.split("_")[-1]
        )
        return previous, index

    def write(
        self,
        folded: Sequence[Item],
        *,
        note: str,
        rounds: int,
        model: str,
        checkpoint_id: str | None = None,
        index: tuple[CheckpointItem | None, IndexState] | None = None,
    ) -> CheckpointItem:
        """The checkpoint replacing ``folded`` (which may hold the previous checkpoint)."""
        checkpoint_id = checkpoint_id or new_id("item")
        previous, state = index or self.index_for(folded, checkpoint_id=checkpoint_id)
        new = [item for item in folded if item is not previous]
        archived = None
        if previous is not None:
            archived = archive_item_text(self.store, previous, previous.text)
        mode = "deterministic" if model == "deterministic" else "summary"
        before = previous.source if previous is not None else None
        models = list(before.models or [before.model]) if before is not None else []
        if model not in models:
            models.append(model)
        turns = [item.turn for item in new] or [0]
        last = folded[-1]
        source = CheckpointSource(
            first_turn=min([*turns, *([before.first_turn] if before else [])]),
            last_turn=max([*turns, *([before.last_turn] if before else [])]),
            task_ids=list(
                dict.fromkeys([*(before.task_ids if before else []), *(i.task_id for i in new)])
            ),
            items_folded=len(new) + (before.items_folded if before else 0),
            rounds=rounds + (before.rounds if before else 0),
            model=model,
            mode=mode,
            previous_checkpoint=previous.id if previous is not None else None,
            models=models,
            index=list(state.pages),
            exchanges=state.exchanges,
            unindexed=state.unindexed,
        )
        header = self.header(new, source, previous=archived)
        parts = [header, note.strip(), state.render()]
        return CheckpointItem(
            id=checkpoint_id,
            text="\n".join(part for part in parts if part),
            task_id=last.task_id,
            turn=last.turn,
            source=source,
        )

    def header(self, new: Sequence[Item], source: CheckpointSource, *, previous: str | None) -> str:
        how = (
            "written without a model"
            if source.mode == "deterministic"
            else f"last updated by {source.model}"
        )
        exchanges = sum(isinstance(item, ToolResultItem) for item in new)
        where = f" of {span(new)}" if new else ""
        earlier = f" Previous version: {previous}." if previous else ""
        return (
            f"{HEADER_PREFIX}: this note replaces {source.items_folded} earlier items; this "
            f"update added {len(new)}{where} ({exchanges} tool exchanges), {how}.{earlier} "
            "Its closing index lists every folded exchange with the archive:// address of its "
            "exact output: read one with recall(address=...).]"
        )

    def fold(self, context: Context, folded: Sequence[Item], checkpoint: CheckpointItem) -> int:
        """Replace ``folded`` by ``checkpoint`` where the last folded item was."""
        folded_ids = {item.id for item in folded}
        last = max(i for i, item in enumerate(context.accumulated) if item.id in folded_ids)
        new_items: list[Item] = []
        for position, item in enumerate(context.accumulated):
            if item.id not in folded_ids:
                new_items.append(item)
            if position == last:
                new_items.append(checkpoint)
        reason = f"folded into checkpoint {checkpoint.id} ({checkpoint.source.mode})"
        states = {item.id: context.changed_state(item, "summarized", reason) for item in folded}
        source = checkpoint.source
        states[checkpoint.id] = ItemState(
            status="summarized",
            reason=(
                f"checkpoint of {source.items_folded} items ({source.mode}, {source.rounds} "
                f"round(s), models {', '.join(source.models)}; index of {source.exchanges} "
                f"entries in {len(source.index)} page(s))"
            ),
            original_tokens=context.accumulated_tokens(folded),
        )
        context.replace(new_items, states=states)
        return len(new_items) - 1

"""What the model sees, item by item: lifetime, state, token cost and why it changed.

:func:`context_report` backs ``Harness.context_report()``. It lists every Resident block,
the tool definitions, every Accumulated item (live or already folded, pruned or shrunk
away), the Refreshed text and every image the next call will carry, so an engineer can see
exactly where the window goes and what compaction did to each item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from harness.context import ItemState, ItemStatus
from harness.messages import CheckpointItem

if TYPE_CHECKING:
    from harness.context import Context

__all__ = ["ContextRow", "EpisodeRow", "context_report", "episode_rows"]

Lifetime = Literal["resident", "accumulated", "refreshed", "transient", "episode"]


class ContextRow(BaseModel):
    """One line of the context report."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    lifetime: Lifetime
    kind: str
    state: ItemStatus = "verbatim"
    tokens: int
    """Calibrated estimate of what the item costs in the next request (0 once it left)."""
    original_tokens: int = 0
    """What the item cost before compaction changed it (0 if never changed)."""
    reason: str = ""
    replaced_by: str | None = None
    """The rewritten copy (pruned or shrunk) that stands in for this item."""
    task_id: str = ""
    turn: int | None = None
    in_context: bool = True
    episode: str = ""
    """The episode the item was recorded in ("" outside any)."""


class EpisodeRow(BaseModel):
    """One episode: its kind, state, dependencies and conclusion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: str
    state: str
    task_id: str = ""
    depends_on: list[str] = []
    conclusion: str = ""
    begun_turn: int | None = None
    ended_turn: int | None = None

    def describe(self) -> str:
        depends = f", depends on {', '.join(self.depends_on)}" if self.depends_on else ""
        turns = f"turns {self.begun_turn}-{self.ended_turn if self.ended_turn else '...'}"
        ended = f": {self.conclusion}" if self.conclusion else ""
        return f"{self.kind} {self.name} ({self.state}, {turns}{depends}){ended}"


def episode_rows(context: Context) -> list[EpisodeRow]:
    """The episodes the context's book knows, oldest first."""
    return [
        EpisodeRow(
            name=e.name,
            kind=e.kind,
            state=e.state,
            task_id=e.task_id,
            depends_on=list(e.depends_on),
            conclusion=e.conclusion,
            begun_turn=e.begun_turn,
            ended_turn=e.ended_turn,
        )
        for e in context.episodes.episodes.values()
    ]


def context_report(context: Context) -> list[ContextRow]:
    """Every item of the session's context, in request order, then the ones that left."""
    cal = context.estimator.calibrated
    rows: list[ContextRow] = []
    for block in context.resident_blocks():
        rows.append(
            ContextRow(
                id=block.name,
                lifetime="resident",
                kind="skill" if block.name.startswith("skill:") else "system",
                tokens=cal(context.estimator.text(block.text)),
            )
        )
    if context.tools:
        rows.append(
            ContextRow(
                id="tools",
                lifetime="resident",
                kind="tool_definitions",
                tokens=cal(context.tools_tokens()),
                reason=", ".join(spec.name for spec in context.tools),
            )
        )
    for item in context.accumulated:
        state = context.states.get(item.id, ItemState())
        reason = state.reason
        if isinstance(item, CheckpointItem) and not reason:
            source = item.source
            reason = f"checkpoint of {source.items_folded} items ({source.mode})"
        rows.append(
            ContextRow(
                id=item.id,
                lifetime="accumulated",
                kind=item.kind,
                state=state.status,
                tokens=cal(context.item_tokens(item)),
                original_tokens=cal(state.original_tokens) if state.status != "verbatim" else 0,
                reason=reason,
                task_id=item.task_id,
                turn=item.turn,
                episode=item.episode,
            )
        )
    live_tokens: dict[str, int] = {}
    for item in context.accumulated:
        if item.episode:
            live_tokens[item.episode] = live_tokens.get(item.episode, 0) + cal(
                context.item_tokens(item)
            )
    for episode in episode_rows(context):
        rows.append(
            ContextRow(
                id=f"episode:{episode.name}",
                lifetime="episode",
                kind=episode.kind,
                tokens=live_tokens.get(episode.name, 0),
                reason=episode.describe(),
                task_id=episode.task_id,
                turn=episode.begun_turn,
                in_context=episode.name in live_tokens,
                episode=episode.name,
            )
        )
    refreshed_text, _ = context.refreshed_tokens()
    refreshed = context.refreshed
    if refreshed.brief or refreshed.observation:
        rows.append(
            ContextRow(
                id="refreshed",
                lifetime="refreshed",
                kind="brief+observation",
                tokens=cal(refreshed_text),
                reason="replaced before every model call",
            )
        )
    for lifetime, images in (
        ("transient", context.transient_images),
        ("refreshed", refreshed.images),
    ):
        for image in images:
            rows.append(
                ContextRow(
                    id=f"image:{image.sha256[:16]}",
                    lifetime=lifetime,  # type: ignore[arg-type]
                    kind="image",
                    tokens=context.estimator.image(image.width, image.height),
                    reason=f"{image.label or 'image'} {image.width}x{image.height}, shown to "
                    "the next model call only",
                )
            )
    live = {item.id for item in context.accumulated}
    if context.retired_forgotten:
        rows.append(
            ContextRow(
                id="earlier-items",
                lifetime="accumulated",
                kind="omitted",
                tokens=0,
                reason=f"{context.retired_forgotten} earlier items left the context long ago; "
                "only the run store keeps their states (harness context RUN --turn N)",
                in_context=False,
            )
        )
    for item_id, retired in context.retired.items():
        if item_id in live:
            continue
        state = context.states.get(item_id, ItemState())
        rows.append(
            ContextRow(
                id=item_id,
                lifetime="accumulated",
                kind=retired.kind,
                state=state.status,
                tokens=0,
                original_tokens=cal(state.original_tokens),
                reason=state.reason or "cleared with the session (reset_session)",
                replaced_by=state.replaced_by,
                task_id=retired.task_id,
                turn=retired.turn,
                in_context=False,
            )
        )
    return rows

"""Built-in tools with which the model shapes its own working set: episodes and
``condense_context``.

``begin_episode`` / ``end_episode`` mark the structure of the work (the rules are in
:mod:`harness.context.episodes.marks`); ``condense_context`` replaces old exchanges with the
model's own bounded memory (:mod:`harness.context.episodes.condense`). A refusal is an ordinary
tool error whose text says why and what to do; the context is then unchanged.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.context.episodes.condense import CondensedMemory, CondenseRefused, condense
from harness.context.episodes.marks import CONCLUSION_MAX_CHARS, EpisodeError
from harness.events import CompactionEvent, EpisodeEvent
from harness.tools import Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from harness.context import Context
    from harness.runtime.session import Session

__all__ = ["workspace_tools"]


class BeginEpisodeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["exploration", "action"] = Field(
        description="exploration: gather information; action: change the world."
    )
    name: str = Field(min_length=1, max_length=64, description="A short unique name.")
    depends_on: list[str] = Field(
        default_factory=list,
        description="For an action: the completed explorations it relies on.",
    )


class EndEpisodeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    conclusion: str = Field(
        "",
        max_length=CONCLUSION_MAX_CHARS * 2,
        description="What it established (required for an exploration; concise).",
    )


def workspace_tools(session: Session) -> list[Tool]:
    """The episode tools and ``condense_context`` for one session."""
    return [
        Tool(
            "begin_episode",
            "Mark the start of a unit of work: an exploration (look, find, check) or an "
            "action (pick, place, open) that names the explorations it depends on. Finished "
            "episodes leave the working set as their conclusion plus archive:// addresses.",
            lambda ctx, **kw: _begin(session, ctx, **kw),
            input_model=BeginEpisodeArgs,
            source="builtin",
            optional="episodes",
        ),
        Tool(
            "end_episode",
            "End the active episode; an exploration ends with a concise conclusion.",
            lambda ctx, **kw: _end(session, ctx, **kw),
            input_model=EndEpisodeArgs,
            source="builtin",
            optional="episodes",
        ),
        Tool(
            "condense_context",
            "At a milestone (no episode active), replace older exchanges with your own "
            "memory of them: completed work, strategies and outcomes, environment changes, "
            "constraints, open questions, archive:// references (at most 2000 tokens). The "
            "newest exchanges, the instruction and Task Notes stay.",
            lambda ctx, **kw: _condense(session, ctx, **kw),
            input_model=CondensedMemory,
            source="builtin",
            optional="episodes",
        ),
    ]


def context_of(session: Session, task_id: str) -> Context:
    """The context the calling lane works in: a sub-agent's own child view, so its
    episodes and its condensation never touch the parent's working set."""
    lane = session.lane(task_id)
    return lane.context if lane is not None else session.context


def _begin(
    session: Session, ctx: ToolContext, *, kind: str, name: str, depends_on: list[str]
) -> ToolOutput:
    context = context_of(session, ctx.task_id)
    context.episode_ledger.charge(context.total_tokens())
    book = context.episodes
    try:
        episode = book.begin(
            task_id=ctx.task_id,
            turn=ctx.turn,
            kind=kind,
            name=name,
            depends_on=depends_on,  # type: ignore[arg-type]
        )
    except EpisodeError as exc:
        return ToolOutput.error(str(exc), "episode_refused")
    ctx.emit(
        EpisodeEvent(
            status="begun", name=name, kind=episode.kind, depends_on=list(episode.depends_on)
        )
    )
    depends = f", depending on {', '.join(episode.depends_on)}" if episode.depends_on else ""
    return ToolOutput(text=f"{episode.kind} episode {name!r} begun{depends}")


def _end(session: Session, ctx: ToolContext, *, name: str, conclusion: str) -> ToolOutput:
    context = context_of(session, ctx.task_id)
    context.episode_ledger.charge(context.total_tokens())
    book = context.episodes
    try:
        episode = book.end(task_id=ctx.task_id, turn=ctx.turn, name=name, conclusion=conclusion)
    except EpisodeError as exc:
        return ToolOutput.error(str(exc), "episode_refused")
    ctx.emit(
        EpisodeEvent(
            status="ended",
            name=name,
            kind=episode.kind,
            depends_on=list(episode.depends_on),
            conclusion=episode.conclusion,
        )
    )
    return ToolOutput(
        text=f"{episode.kind} episode {name!r} ended"
        + (f": {episode.conclusion}" if episode.conclusion else "")
    )


def _condense(session: Session, ctx: ToolContext, **fields: object) -> ToolOutput:
    context = context_of(session, ctx.task_id)
    context.episode_ledger.charge(context.total_tokens())
    started = time.monotonic()
    try:
        done = condense(
            context,
            CondensedMemory.model_validate(fields),
            task_id=ctx.task_id,
            turn=ctx.turn,
            address_exists=lambda address: session.read_archive(address) is not None,
            store=session.store,
        )
    except CondenseRefused as exc:
        return ToolOutput.error(f"condense_context refused: {exc}; nothing changed", "refused")
    context.episode_ledger.hold_out(done.tokens_before - done.tokens_after)
    lane = session.lane(ctx.task_id)
    if lane is not None:
        lane.sync_item_states()
    else:
        session.sync_item_states()
    ctx.emit(
        CompactionEvent(
            status="completed",
            mode="explicit",
            reason=f"condense_context at turn {ctx.turn}: {done.replaced} items of turns "
            f"{done.first_turn}-{done.last_turn} replaced by the model's memory "
            f"{done.memory.id}",
            tokens_before=done.tokens_before,
            tokens_after=done.tokens_after,
            items_folded=done.replaced,
            items_retained=len(context.accumulated),
            duration_s=round(time.monotonic() - started, 6),
            checkpoint_id=done.memory.id,
        )
    )
    return ToolOutput(
        text=f"context condensed: {done.replaced} earlier items replaced by your memory "
        f"(about {done.tokens_before} -> {done.tokens_after} tokens); the exact outputs stay "
        "reachable by their addresses"
    )

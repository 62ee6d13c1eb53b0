"""The refresh phase: everything that happens before a model call, in the specified order.

1. a Task Notes snapshot is appended when the notes changed;
2. a new observation replaces the previous one;
3. the scene graph is refreshed and its Brief rendered;
4. Accumulated context is compacted if the request would not fit;
5. reaching the nudge level adds one message telling the model how to relieve the
   pressure itself (once per task and per sub-agent lane, :func:`nudge`).

A tool source (an MCP server) that changed its tools during the last turn has its new
tool set offered first, so a model call and the tool call it decides see the same tools.
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any

from harness.cancel import Cancelled
from harness.context.compaction.compactor import RetiresTasks
from harness.context.eviction.pressure import nudge_text
from harness.errors import ContextBudgetError, ModelError
from harness.events import (
    ContextPressureEvent,
    NotificationEvent,
    ObservationEvent,
    ToolsListedEvent,
)
from harness.messages import ImagePart, TaskNotesItem
from harness.providers.inflight import Cancelled as ProbeCancelled
from harness.runtime.lane import Lane, Steps
from harness.runtime.task import TaskEnding
from harness.tools import to_jsonable
from harness.world.observation import encode_observation_frames, render_observation

logger = logging.getLogger(__name__)

__all__ = ["compact", "nudge", "offer_tools", "refresh", "retire_ended_tasks"]


def refresh(lane: Lane) -> Steps[TaskEnding | None]:
    """Prepare the context for the next model call; an ending if a part failed."""
    if lane.state.turn > 1 and lane.session.tooling.sync_tool_sources():
        ending = yield from offer_tools(lane)
        if ending is not None:
            return ending
    snapshot_task_notes(lane)
    observed = yield from observe(lane)
    if isinstance(observed, TaskEnding):
        return observed
    text, images = observed
    ending = yield from refresh_scene(lane, observation_text=text, images=images)
    if ending is not None:
        return ending
    ending = yield from compact(lane, force=False, reason="")
    lane.context.episode_ledger.tick()
    if ending is None:
        yield from nudge(lane)
    return ending


def nudge(lane: Lane) -> Steps[None]:
    """The first time a task's request reaches the nudge level: one short message in the
    next request (with the observation, so it reaches exactly that request and never piles
    up in the history) and a ``context_pressure`` event that keeps it. Sent once per task,
    and once per sub-agent lane (each has its own state), never repeated: after it the
    cleanup level does the work, whatever the request does."""
    context = lane.context
    pressure = context.budget.pressure
    if pressure is None or lane.state.nudged:
        return
    total = context.total_tokens()
    if total < pressure.nudge_tokens:
        return
    lane.state.nudged = True
    active = [e.name for e in context.episodes.active(lane.state.task_id)]
    text = nudge_text(pressure, total, active_episodes=active)
    refreshed = context.refreshed
    observation = f"{refreshed.observation}\n\n{text}" if refreshed.observation else text
    context.refreshed = refreshed.model_copy(update={"observation": observation})
    yield lane.emit(
        ContextPressureEvent(
            tokens=total,
            context_window=pressure.context_window,
            nudge_tokens=pressure.nudge_tokens,
            cleanup_tokens=pressure.cleanup_tokens,
            message=text,
        )
    )


def offer_tools(lane: Lane) -> Steps[TaskEnding | None]:
    """Put the tools that fit into Resident context and announce them (and, when the
    window left optional ones out, which and why: the model is told by their absence, a
    call to one anyway is refused with the reason)."""
    withheld = _withheld_episode_tools(lane)
    offer = lane.session.tooling.offer_tools(
        lane.tools, context=lane.context, model=lane.model, exclude=frozenset(withheld)
    )
    for name in withheld:
        lane.refusals.setdefault(
            name,
            "not offered in this task: " + lane.context.episode_ledger.describe() + " (the "
            "harness evicts and folds without them)",
        )
    for notice in lane.session.tooling.withheld_tool_notices():
        yield lane.emit(NotificationEvent(message=notice, level="warning"))
    notice = offer.notice()
    if notice is not None:
        yield lane.emit(NotificationEvent(message=notice, level="warning"))
    for names in offer.left_out.values():
        for name in names:
            lane.refusals.setdefault(name, offer.reason(name) or "not offered")
    context = lane.context
    yield lane.emit(
        ToolsListedEvent(
            tools=[t.name for t in offer.offered],
            physical=[t.name for t in offer.offered if t.physical],
            tokens=context.estimator.calibrated(context.tools_tokens()),
        )
    )
    if offer.refusal is not None:
        return TaskEnding("failed", f"capability admission: {offer.refusal}")
    return None


def _withheld_episode_tools(lane: Lane) -> list[str]:
    """The episode tools this task does not offer (see :attr:`TaskState.episode_tools`)."""
    if lane.state.episode_tools:
        return []
    return [t.name for t in lane.tools.visible() if getattr(t, "optional", None) == "episodes"]


def snapshot_task_notes(lane: Lane) -> None:
    """A snapshot into Accumulated and the store when the notes changed since the last one
    (a version bump that left the text as it was is not a change)."""
    state = lane.state
    if state.notes.version == state.notes_version_sent:
        return
    state.notes_version_sent = state.notes.version
    text = state.notes.render()
    if text == state.notes_text_sent:
        return
    state.notes_text_sent = text
    lane.record(TaskNotesItem(text=text, version=state.notes.version))
    lane.session.memory_link.store_task_notes(state)


def observe(lane: Lane) -> Steps[tuple[str, list[ImagePart]] | TaskEnding]:
    """A new observation: its text and encoded frames for Refreshed context."""
    provider = lane.session.observation_provider
    if provider is None:
        return "", []
    generation = lane.session.robot.line.generation  # first: a command may start meanwhile
    try:
        observation = provider.observe()
    except Exception as exc:
        return TaskEnding("failed", f"observation provider failed: {type(exc).__name__}: {exc}")
    lane.state.observation = observation
    lane.state.observed_in = generation
    images = encode_observation_frames(observation, lane.session.config.observation)
    lane.session.keep_observation_images(images)
    yield lane.emit(
        ObservationEvent(
            cameras={image.label: [image.width, image.height] for image in images},
            images=[image.sha256 for image in images],
            state=to_jsonable(observation.state),
            timestamp=observation.timestamp,
        )
    )
    return render_observation(observation), images


def refresh_scene(
    lane: Lane, *, observation_text: str, images: list[ImagePart]
) -> Steps[TaskEnding | None]:
    brief = ""
    scene = lane.session.scene
    if scene is not None:
        try:
            refreshed = scene.refresh(lane.state.observation, focus=lane.state.focus_text())
        except Exception as exc:
            return TaskEnding("failed", f"scene graph failed: {type(exc).__name__}: {exc}")
        brief = refreshed.brief
        if refreshed.event is not None:
            yield lane.emit(refreshed.event)
    context = lane.context
    if images:
        decide_vision(lane)
    context.images_visible = getattr(lane.model, "vision", None) is not False
    episodes = context.episodes.render(lane.state.task_id)
    if episodes:
        observation_text = f"{observation_text}\n\n{episodes}" if observation_text else episodes
    context.set_refreshed(brief=brief, observation=observation_text, images=images)
    return None


def decide_vision(lane: Lane) -> None:
    """A model that has not decided whether it sees images decides now (its probe), before
    the request is priced: frames it will not be sent are never charged to the budget. A
    probe that fails decides nothing (the model call tries again; until then frames
    count)."""
    model = lane.model
    decide = getattr(model, "decide_vision", None)
    if getattr(model, "vision", True) is not None or not callable(decide):
        return
    try:
        decide(lane.should_cancel)
    except (ModelError, ProbeCancelled) as exc:
        logger.info("the vision probe decided nothing yet: %s", exc)


def retire_ended_tasks(lane: Lane) -> Steps[None]:
    """At a task's start: the ended tasks' tool traffic leaves the working set (folded into
    the checkpoint, reachable through its index); their prose stays."""
    compactor = lane.compactor
    if not isinstance(compactor, RetiresTasks):
        return
    for event in compactor.retire_tasks(lane.context, running_task=lane.state.task_id):
        yield lane.emit(event)
    lane.sync_item_states()


def compact(lane: Lane, *, force: bool, reason: str) -> Steps[TaskEnding | None]:
    """Run the compactor; its summarizer's calls are part of the task's usage, and the
    operator's cancel wins over a summarizer call in flight."""
    ending: TaskEnding | None = None
    compactor = lane.compactor
    options: dict[str, Any] = {"force": force, "reason": reason}
    if _takes_cancelled(type(compactor)):
        options["cancelled"] = lane.should_cancel
    try:
        for event in compactor.compact(lane.context, **options):
            lane.state.add_usage(event.usage)
            yield lane.emit(event)
    except ContextBudgetError as exc:
        ending = TaskEnding("failed", f"context budget: {exc}")
    except Cancelled as exc:
        ending = TaskEnding("cancelled", f"{exc} (compaction)")
    lane.sync_item_states()
    return ending


@functools.cache
def _takes_cancelled(compactor_type: type) -> bool:
    """Whether a compactor accepts the operator's cancel (one written before the
    ``cancelled`` keyword existed still works; it just cannot be interrupted). Read once
    per compactor class, not on every turn."""
    try:
        parameters = inspect.signature(compactor_type.compact).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    return "cancelled" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )

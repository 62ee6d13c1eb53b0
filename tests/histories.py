"""Synthetic Accumulated histories for compaction tests, recorded the way the loop records.

Every tool output is archived exactly at ``archive://<task>/<call_id>`` and enters the
context bounded to ``record_max_chars`` (state ``truncated``), Task Notes snapshots are
appended before each decision, and the current turn ends with the snapshot the loop appends
before calling the compactor. Text is generated from a seed so hypothesis only has to draw
sizes.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.config import ContextConfig
from harness.context import Budget, Context, bounded_text
from harness.messages import (
    AssistantItem,
    ImagePart,
    ImageRef,
    InstructionItem,
    Item,
    ModelRequest,
    ModelResponse,
    ReasoningBlock,
    RevisionItem,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
    ToolSpec,
    Verdict,
)
from harness.store import MemoryRunStore
from harness.tokens import TokenEstimator

__all__ = [
    "VALID_NOTE",
    "History",
    "TaskSpec",
    "TurnSpec",
    "append_task",
    "append_turns",
    "build_history",
    "filler",
    "long_task_spec",
    "recall_references",
    "valid_note_responder",
]

RECORD_MAX_CHARS = ContextConfig().record_max_chars
WORDS = (
    *("red_cube_1", "blue_cube_2", "tray_a", "gripper", "pose", "x=0.412", "y=-0.118"),
    *("z=0.021", "grasp", "ok", "failed", "E_COLLISION", "clearance", "0.05", "m", "camera"),
    *("front", "wrist", "approach", "retreat", "place", "pick", "joint", "torque", "limit"),
    *("safety", "envelope", "clamp", "verified"),
)

VALID_NOTE = (
    "## Objective\n- sort the cubes into tray_a\n"
    "## Progress\n- red_cube_1 placed and verified\n"
    "## Evidence\n- red_cube_1 at (0.412, -0.118, 0.021)\n"
    "## Failures\nnone\n"
    "## Open work\n- place blue_cube_2"
)


@functools.lru_cache(maxsize=8192)
def filler(size: int, seed: int) -> str:
    """Readable pseudo-robot text of exactly ``size`` characters.

    Kept: the property tests ask for the same (size, seed) again and again (16,000 calls,
    3,900 distinct, in the compaction tests), and drawing word by word was about 3 s of
    their CPU."""
    if size <= 0:
        return ""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:size]


@dataclass(frozen=True)
class TurnSpec:
    notes_chars: int = 300
    """0: the notes did not change this turn (no snapshot)."""
    text_chars: int = 40
    reasoning_chars: int = 0
    calls: int = 1
    result_chars: Sequence[int] = (200,)
    images: int = 0
    revision: bool = False
    error: bool = False


@dataclass(frozen=True)
class TaskSpec:
    instruction_chars: int = 80
    turns: Sequence[TurnSpec] = (TurnSpec(),)
    instruction_images: int = 0


@dataclass
class History:
    context: Context
    store: MemoryRunStore
    originals: dict[str, str] = field(default_factory=dict)
    """Item id -> the exact original text (tool results: the full archived output)."""
    calls: int = 0
    tasks: int = 0
    counter: int = 0
    version: int = 0


def _ref(seed: int) -> ImageRef:
    return ImageRef(sha256=f"{seed:064x}", width=640, height=480, label="wrist")


def build_history(
    tasks: Sequence[TaskSpec],
    *,
    window: int = 200_000,
    reserve: int = 16_384,
    resident_chars: int = 2000,
    refreshed_chars: int = 400,
    refreshed_images: int = 1,
    transient_images: int = 0,
    seed: int = 0,
) -> History:
    """A context holding ``tasks`` as the loop would have recorded them."""
    context = Context(TokenEstimator(), Budget(context_window=window, reserve_tokens=reserve))
    store = MemoryRunStore()
    history = History(context=context, store=store)
    context.set_resident("system", filler(resident_chars, seed))
    context.set_resident("embodiment", "Robot: 7-dof arm with parallel gripper")
    context.set_tools(
        [
            ToolSpec(
                name=name,
                description=f"{name} an object",
                parameters={"type": "object", "properties": {"ref": {"type": "string"}}},
            )
            for name in ("pick", "place", "inspect")
        ]
    )
    image = ImagePart(data=b"\xff\xd8jpeg", width=320, height=240, label="front")
    context.set_refreshed(
        brief=filler(refreshed_chars, seed + 1),
        observation="Observation at t=1.000",
        images=[image] * refreshed_images,
    )
    context.add_transient_images(
        [ImagePart(data=b"\xff\xd8tool", width=64, height=64, label="tool")] * transient_images
    )
    history.counter = seed * 100_003
    for task in tasks:
        append_task(history, task)
    return history


def append_task(history: History, task: TaskSpec) -> None:
    """Record one more task (instruction, turns, the current notes snapshot)."""
    task_index = history.tasks
    history.tasks += 1
    task_id = f"task_{task_index}"
    history.counter += 1
    instruction = filler(max(1, task.instruction_chars), history.counter)
    _add(
        history,
        task_id,
        InstructionItem(
            text=instruction,
            turn=0,
            images=[_ref(history.counter + i) for i in range(task.instruction_images)],
        ),
        instruction,
    )
    append_turns(history, task.turns)


def append_turns(history: History, turns: Sequence[TurnSpec]) -> None:
    """Record more turns of the latest task (then the current notes snapshot)."""
    context, store = history.context, history.store
    task_index = history.tasks - 1
    task_id = f"task_{task_index}"
    done = max((i.turn for i in context.accumulated if i.task_id == task_id), default=0)
    # the previous "current" snapshot was appended at turn done; new turns follow it
    for turn_index, turn in enumerate(turns, start=max(1, done)):
        history.counter += 1
        counter = history.counter
        if turn.notes_chars:
            history.version += 1
            notes = f"Task Notes v{history.version}\n" + filler(turn.notes_chars, counter)
            _add(
                history,
                task_id,
                TaskNotesItem(text=notes, version=history.version, turn=turn_index),
                notes,
            )
        calls = [
            ToolCall(id=f"call_{task_index}_{turn_index}_{k}", name="inspect", arguments={})
            for k in range(turn.calls)
        ]
        reasoning = (
            [ReasoningBlock(text=filler(turn.reasoning_chars, counter + 7))]
            if turn.reasoning_chars
            else []
        )
        _add(
            history,
            task_id,
            AssistantItem(
                text=filler(turn.text_chars, counter + 3),
                reasoning=reasoning,
                tool_calls=calls,
                turn=turn_index,
            ),
        )
        for k, call in enumerate(calls):
            history.calls += 1
            size = turn.result_chars[k % len(turn.result_chars)] if turn.result_chars else 50
            full = f"{call.name} #{k}: " + filler(size, counter + 11 + k)
            address = f"archive://{task_id}/{call.id}"
            store.archive_put(address, full, task_id=task_id, call_id=call.id, tool=call.name)
            text, truncated = bounded_text(full, RECORD_MAX_CHARS, address=address)
            item = _add(
                history,
                task_id,
                ToolResultItem(
                    call_id=call.id,
                    name=call.name,
                    text=text,
                    archive=address,
                    is_error=turn.error,
                    error_kind="E_COLLISION" if turn.error else None,
                    evaluation=Verdict(status="success", evidence="in tray")
                    if k == 0 and not turn.error
                    else None,
                    images=[_ref(counter + 50 + i) for i in range(turn.images)],
                    turn=turn_index,
                ),
                full,
            )
            if truncated:
                context.set_state(item.id, "truncated", "longer than record_max_chars")
        if turn.revision:
            _add(
                history,
                task_id,
                RevisionItem(text="also stack them", turn=turn_index),
                "also stack them",
            )
    # The loop appends a fresh snapshot before compacting for the next decision.
    history.version += 1
    last = max(1, done) + len(turns)
    notes = f"Task Notes v{history.version} (current)\n" + filler(250, history.counter + 99)
    _add(history, task_id, TaskNotesItem(text=notes, version=history.version, turn=last), notes)
    context.drain_changes()


def _add(history: History, task_id: str, item: Item, original: str | None = None) -> Item:
    item = item.model_copy(update={"task_id": task_id})
    history.context.append(item)
    if original is not None:
        history.originals[item.id] = original
    return item


def long_task_spec(turns: int = 24, result_chars: int = 1500) -> TaskSpec:
    """A task of many similar scan turns (the usual shape of a long robot task)."""
    return TaskSpec(
        instruction_chars=120,
        turns=[TurnSpec(notes_chars=200, text_chars=60, result_chars=[result_chars])] * turns,
    )


_RECALL = re.compile(r"recall\(address='(archive://[^']+)'\)")


def recall_references(text: str) -> list[str]:
    """Every archive address a marker in ``text`` points to."""
    return _RECALL.findall(text)


def valid_note_responder(request: ModelRequest) -> ModelResponse:
    """A summarizer that always answers with a small, well-formed handoff note."""
    return ModelResponse(text=VALID_NOTE)

"""A recorded session in a real SQLite run store, for the store, CLI and report tests.

Two tasks in one session. The first has a bit of everything a report and the CLI must
show: camera frames that change (and a retention setting that drops every other one), a
physical move clamped by the safety envelope and confirmed by the evaluator, a tool output
with secrets, a tool raising with a secret in its message, a truncated bulky output, a
compaction that folds early turns into a checkpoint, and a final report. The second is a
one-line follow-up.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embodiment.types import ActionSpec, Observation
from harness import Harness, HarnessConfig, tool
from harness.context import Context, ItemState
from harness.events import CompactionEvent
from harness.images import encode_frame
from harness.messages import CheckpointItem, CheckpointSource, ModelResponse, Verdict
from harness.providers import ScriptedModel, call, reply
from harness.tools import Tool, ToolOutput
from tests.conftest import BARE_ARM, BARE_OPTIONS, BoxSafety, move_to_tool
from worlds.fake import FakeRobot

API_KEY_ENV = "HARNESS_TEST_PROVIDER_KEY"
API_KEY_VALUE = "zq-test-provider-key-0123456789"
SECRETS = (
    API_KEY_VALUE,
    "ROBOT-SECRET-123456",
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
    "abcdefghijklmnop1234567890",
    "hdr-secret-value-42",
)
"""Every secret the recorded run handles; none may appear in the store or an export."""


class ChangingDriver(FakeRobot):
    """Frames whose brightness follows the arm's x and that differ at every observation
    (a clock stripe), so retention visibly drops frames."""

    def __init__(self) -> None:
        super().__init__(BARE_ARM, **BARE_OPTIONS)
        self.frames = 0

    def capabilities(self) -> list[ActionSpec]:
        """None: the recorded session moves the arm through its own ``move_to`` tool."""
        return []

    def observe(self) -> Observation:
        observation = super().observe()
        self.frames += 1
        frame = np.full((48, 64, 3), int(60 + 150 * abs(self.position[0])), dtype=np.uint8)
        frame[:, : 4 * self.frames] = 255
        return Observation(
            images={"front": frame}, state=observation.state, safety=observation.safety
        )


INSTRUCTION_IMAGE = encode_frame(np.full((16, 16, 3), 30, dtype=np.uint8), label="sketch")
"""Given with both tasks: stored once."""


class ConfirmingEvaluator:
    """Confirms a move when the arm is where the (clamped) arguments say."""

    def __init__(self, driver: FakeRobot) -> None:
        self.driver = driver

    def evaluate(
        self,
        *,
        tool: Tool,
        arguments: Mapping[str, Any],
        output: Any,
        observation: Any,
        segment: int,
    ) -> Verdict:
        at = self.driver.position
        ok = abs(at[0] - float(arguments["x"])) < 1e-6
        return Verdict(
            status="success" if ok else "failure",
            evidence=f"gripper at x={at[0]:.3f}",
            evaluator="test",
        )


class FoldingCompactor:
    """Folds every turn before the previous one into a checkpoint, once, when Accumulated
    passes ``min_items`` (stands in for the real compactor; the store only sees its
    effects through the Harness)."""

    def __init__(self, min_items: int) -> None:
        self.min_items = min_items
        self.folded = False

    def compact(
        self, context: Context, *, force: bool = False, reason: str = ""
    ) -> Iterator[CompactionEvent]:
        items = context.accumulated
        if self.folded or len(items) < self.min_items:
            return
        self.folded = True
        last_turn = max(item.turn for item in items)
        old = [item for item in items if item.turn < last_turn - 1]
        kept = [item for item in items if item.turn >= last_turn - 1]
        before = context.total_tokens()
        yield CompactionEvent(status="started", tokens_before=before)
        checkpoint = CheckpointItem(
            task_id=old[0].task_id,
            turn=last_turn,
            text="Checkpoint: moved the arm (clamped to x=0.5, confirmed); read the status.",
            source=CheckpointSource(
                first_turn=old[0].turn,
                last_turn=old[-1].turn,
                task_ids=[old[0].task_id],
                items_folded=len(old),
                rounds=1,
                model="test",
                mode="deterministic",
            ),
        )
        states = {
            item.id: ItemState(status="summarized", reason=f"folded into {checkpoint.id}")
            for item in old
        }
        context.replace([checkpoint, *kept], states=states)
        yield CompactionEvent(
            status="completed",
            mode="deterministic",
            tokens_before=before,
            tokens_after=context.total_tokens(),
            items_folded=len(old),
            items_retained=len(kept),
            rounds=1,
            checkpoint_id=checkpoint.id,
        )


@tool
def leaky_status() -> str:
    """Report the controller status (it echoes credentials)."""
    return (
        f"arm ok; token ROBOT-SECRET-123456, key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789, "
        f"provider key {API_KEY_VALUE}"
    )


@tool
def gripper_login() -> str:
    """Log in to the gripper controller."""
    raise ConnectionError("auth failed for Bearer abcdefghijklmnop1234567890 at the gripper")


@tool
def dump_log() -> ToolOutput:
    """Dump the controller log (long)."""
    return ToolOutput(text="\n".join(f"log line {i:04d}: joint temps nominal" for i in range(120)))


@dataclass
class RecordedSession:
    store: Path
    session_id: str
    first_task: str
    second_task: str
    config: HarnessConfig
    model: ScriptedModel


FIRST_SCRIPT: list[ModelResponse] = [
    ModelResponse(
        text="Moving to the tray first.",
        tool_calls=[call("move_to", x=0.9, y=0.0, z=0.1).tool_calls[0]],
    ),
    call("leaky_status"),
    call("gripper_login"),
    call("dump_log"),
    call("update_task_notes", phase="placing"),
    reply("Placed the cube in the tray; the gripper login failed, status read."),
]


def record_session(folder: Path, monkeypatch: Any) -> RecordedSession:
    """Run the two tasks into ``folder/store`` and return where they are."""
    monkeypatch.setenv(API_KEY_ENV, API_KEY_VALUE)
    config = HarnessConfig.model_validate(
        {
            "model": {
                "provider": "scripted",
                "name": "scripted",
                "api_key_env": API_KEY_ENV,
                "options": {"headers": {"Authorization": "hdr-secret-value-42"}},
                "prices": {"input": 3.0, "output": 15.0},
            },
            "embodiment": None,
            "driver": None,
            "memory": {"enabled": False},
            "context": {"record_max_chars": 600},
            "evaluation": {"required_tools": ["move_to"]},
            "run": {
                "store": str(folder / "store"),
                "image_retention_every": 2,
                "secret_patterns": [r"ROBOT-SECRET-\d+"],
            },
        }
    )
    driver = ChangingDriver()
    model = ScriptedModel([*FIRST_SCRIPT, reply("hello again")], context_window=50_000)
    with Harness.from_config(
        config,
        model=model,
        driver=driver,
        safety=BoxSafety(),
        evaluator=ConfirmingEvaluator(driver),
        compactor=FoldingCompactor(min_items=12),
        tools=[move_to_tool(driver), leaky_status, gripper_login, dump_log],
    ) as harness:
        first = harness.run("put the red cube in the tray", images=[INSTRUCTION_IMAGE])
        second = harness.run("say hello", images=[INSTRUCTION_IMAGE])
        session_id = harness.session_id
    assert first.status == "completed", first
    assert second.status == "completed", second
    return RecordedSession(
        store=folder / "store",
        session_id=session_id,
        first_task=first.task_id,
        second_task=second.task_id,
        config=config,
        model=model,
    )

"""No identical retry of a refusal that cannot change (harness/runtime/refusals.py).

A driver that declines a call without moving ("too wide", "closed; open it first") is not
asked the identical call again while nothing has moved: the model reads that the reason
still holds, and ``run.repeated_refusals`` such repeats end the task ``failed`` (stuck).
The driver here is a small fake whose refusals depend on its state, behind the real
conversion of a driver's result (``action_output``) and the real loop and envelope.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from embodiment.types import ActionResult
from harness import Harness, HarnessConfig
from harness.events import DoneEvent, EventBase, ToolResultEvent
from harness.messages import ToolCall
from harness.providers import ScriptedModel, call, reply
from harness.runtime.refusals import REPEATED_REFUSAL, RefusalMemory, is_refusal
from harness.tools import Tool, ToolOutput
from harness.world.physical import action_output
from tests.conftest import BARE_ARM, BARE_OPTIONS, BoxSafety, move_to_tool
from tests.tiers import examples
from worlds.fake import FakeRobot


class DrawerRobot(FakeRobot):
    """The fake arm beside a drawer, with three actions of its own by ref: ``open`` (the
    drawer), ``pick`` and ``place``. It places into the drawer only once it is open; a pick
    of ``wide`` is always refused. A refused command is answered before it is executed."""

    DRAWER_ACTIONS = ("pick", "place", "open")

    def __init__(self) -> None:
        super().__init__(BARE_ARM, **BARE_OPTIONS)
        self.drawer_open = False

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        if action not in self.DRAWER_ACTIONS:
            return super().execute(action, arguments)
        if action == "place" and not self.drawer_open:
            return ActionResult(ok=False, message="drawer_1 is closed; open it first")
        if action == "pick" and arguments.get("ref") == "wide":
            return ActionResult(ok=False, message="wide is 0.120 m across; fingers open 0.08 m")
        if action == "open":
            self.drawer_open = True
        self.executed.append((action, dict(arguments)))
        return ActionResult(ok=True, message=f"{action} done", applied=dict(arguments))


class RefArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ref: str


def driver_tool(driver: DrawerRobot, name: str) -> Tool:
    def handler(ref: str) -> ToolOutput:
        return action_output(name, driver.execute(name, {"ref": ref}))

    return Tool(name, f"{name} a thing", handler, input_model=RefArgs, physical=True)


def run(config: HarnessConfig, script: list[Any]) -> tuple[list[EventBase], DrawerRobot]:
    driver = DrawerRobot()
    tools = [driver_tool(driver, n) for n in ("pick", "place", "open")]
    model = ScriptedModel(script)
    with Harness(
        config,
        model=model,
        driver=driver,
        safety=BoxSafety(),
        physical_tools=[*tools, move_to_tool(driver)],
    ) as h:
        events = list(h.run_stream("put it in the drawer"))
    return events, driver


def results(events: list[EventBase]) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent)]


def done(events: list[EventBase]) -> DoneEvent:
    return next(e for e in events if isinstance(e, DoneEvent))


def test_second_identical_refusal_is_answered_not_sent(config: HarnessConfig) -> None:
    events, driver = run(config, [call("place", ref="cup"), call("place", ref="cup"), reply("ok")])
    first, second = results(events)
    assert first.error_kind == "action_failed" and "closed" in first.text
    assert second.error_kind == REPEATED_REFUSAL and not second.executed
    assert "still holds" in second.text and "closed; open it first" in second.text
    assert driver.executed == []  # the driver was never asked a second time
    assert done(events).status == "completed"


def test_repeats_end_the_task_failed_as_stuck(config: HarnessConfig) -> None:
    config.run.repeated_refusals = 2
    script = [call("pick", ref="wide")] * 5 + [reply("never")]
    events, _ = run(config, script)
    kinds = [r.error_kind for r in results(events)]
    assert kinds == ["action_failed", REPEATED_REFUSAL, REPEATED_REFUSAL]
    ending = done(events)
    assert ending.status == "failed" and "stuck" in ending.termination_reason


def test_a_motion_in_between_lets_the_call_run_again(config: HarnessConfig) -> None:
    script = [
        call("place", ref="cup"),
        call("open", ref="drawer_1"),
        call("place", ref="cup"),
        reply("done"),
    ]
    events, driver = run(config, script)
    kinds = [r.error_kind for r in results(events)]
    assert kinds == ["action_failed", None, None]
    assert [a for a, _ in driver.executed] == ["open", "place"]


def test_other_arguments_are_a_new_call(config: HarnessConfig) -> None:
    script = [call("pick", ref="wide"), call("pick", ref="cup"), reply("done")]
    events, _ = run(config, script)
    assert [r.error_kind for r in results(events)] == ["action_failed", None]


def test_a_failed_motion_is_not_a_refusal(config: HarnessConfig) -> None:
    """A physical action that moved (something applied) and failed may succeed on a retry."""
    moved = ToolOutput.error("grasp closed on nothing", "action_failed", applied={"x": 1})
    assert not is_refusal(moved, physical=True)
    assert is_refusal(ToolOutput.error("no", "action_failed"), physical=True)
    assert not is_refusal(ToolOutput.error("busy", "driver_busy"), physical=True)
    assert not is_refusal(ToolOutput.error("slow", "timeout"), physical=True)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["pick", "place", "open"]),
            st.sampled_from(["a", "b"]),
            st.sampled_from(["refused", "moved", "failed_moving"]),
        ),
        max_size=12,
    )
)
def test_memory_against_an_oracle(steps: list[tuple[str, str, str]]) -> None:
    """A notice exactly when the same call was refused with no motion since (an oracle
    that replays the history, written apart from the memory)."""
    memory = RefusalMemory()
    history: list[tuple[str, str]] = []  # (call key, what happened)
    for turn, (name, ref, what) in enumerate(steps):
        key = f"{name}:{ref}"
        expected = False
        for past_key, past in reversed(history):
            if past in ("moved", "failed_moving"):
                break
            if past == "refused" and past_key == key:
                expected = True
                break
        tool_call = ToolCall(id=f"c{turn}", name=name, arguments={"ref": ref})
        notice = memory.repeat(tool_call)
        assert (notice is not None) == expected
        if notice is not None:
            memory.note(tool_call, notice, turn=turn, physical=True, executed=False)
            history.append((key, "notice"))
            continue
        output = {
            "refused": ToolOutput.error("no", "action_failed"),
            "moved": ToolOutput(text="ok", applied={"x": 1}),
            "failed_moving": ToolOutput.error("missed", "action_failed", applied={"x": 1}),
        }[what]
        memory.note(tool_call, output, turn=turn, physical=True, executed=True)
        history.append((key, what))


def test_config_rejects_zero() -> None:
    with pytest.raises(ValueError):
        HarnessConfig.model_validate({"run": {"repeated_refusals": 0}})

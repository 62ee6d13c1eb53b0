"""Drive a robot with a real model: OpenAI, Anthropic, or a local OpenAI-compatible server.

    export OPENAI_API_KEY=sk-...
    python examples/real_provider.py --model openai:gpt-4.1-mini

    export ANTHROPIC_API_KEY=sk-ant-...
    python examples/real_provider.py --model anthropic:claude-sonnet-4-6

    ollama pull qwen2.5vl:7b      # any local server speaking the OpenAI API
    python examples/real_provider.py --model ollama:qwen2.5vl:7b
    python examples/real_provider.py --model openai:my-model@http://gpu-box:8000/v1 \
        --context-window 8192     # a model the built-in table does not know

A model outside the built-in table needs ``--context-window`` (the window the server runs
it with, e.g. llama.cpp's ``--n_ctx``); whether it sees the camera is probed once unless
``--vision true|false`` says so.

This is the control script you would write for hardware: ``run_stream()`` runs in your own
thread, the first Ctrl-C cancels cooperatively (the robot is stopped), a second one
aborts, and every event is printed as it arrives (model text streams as it is generated,
retries and their waits are shown). The robot here is a toy gantry over a 1 m table with
one red cube and a top-down camera, so the script needs nothing but this package; swap in
your own driver and safety envelope.

Without the key the chosen provider needs, or without a context window for an unknown
model, the script says what to set and exits with status 2 (nothing is sent anywhere).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from embodiment.types import ActionResult, Observation, SafetyDecision
from harness import ConfigError, Harness, HarnessConfig, Tool
from harness.errors import UnknownContextWindowError
from harness.events import DoneEvent, EventBase
from harness.providers import build_model, parse_model_spec

WORKSPACE = {"x": (0.0, 1.0), "y": (0.0, 1.0), "z": (0.02, 0.5)}
"""Metres; the safety envelope clamps every commanded position into this box."""


class ToyGantry:
    """A point gripper over a table with one cube; motions honour ``stop()``."""

    def __init__(self) -> None:
        self.position = [0.5, 0.5, 0.4]
        self.closed = False
        self.cube = [0.22, 0.71, 0.02]
        self.holding = False
        self._stop = threading.Event()

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None:
        self._stop.set()

    def observe(self) -> Observation:
        frame = np.full((96, 96, 3), 200, dtype=np.uint8)
        cx, cy = (int(v * 95) for v in self.cube[:2])
        frame[max(0, cy - 3) : cy + 4, max(0, cx - 3) : cx + 4] = (220, 30, 30)
        gx, gy = (int(v * 95) for v in self.position[:2])
        frame[gy, :] = frame[:, gx] = (40, 40, 200)
        return Observation(
            images={"top": frame},
            state={
                "gripper_xyz": [round(v, 3) for v in self.position],
                "gripper_closed": self.closed,
                "holding": "red_cube" if self.holding else None,
                "red_cube_xyz": [round(v, 3) for v in self.cube],
            },
            safety={"clearance_m": self.position[2]},
        )

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        self._stop.clear()
        if self._stop.wait(0.05):  # a real arm takes time; stop() interrupts it
            return ActionResult(ok=False, message="stopped", interrupted=True)
        if action == "move_to":
            self.position = [arguments["x"], arguments["y"], arguments["z"]]
            if self.holding:
                self.cube = list(self.position)
            return ActionResult(ok=True, message=f"at {self.position}", applied=arguments)
        close = bool(arguments["close"])
        near = all(abs(a - b) < 0.03 for a, b in zip(self.position, self.cube, strict=True))
        self.closed, self.holding = close, close and near
        grip = "holding red_cube" if self.holding else ("closed on nothing" if close else "open")
        return ActionResult(ok=True, message=f"gripper {grip}", applied=arguments)


class BoxEnvelope:
    """Clamps positions into :data:`WORKSPACE`; blocks without a clearance reading."""

    def check(
        self, tool: Tool, arguments: Mapping[str, Any], observation: Observation | None
    ) -> SafetyDecision:
        if observation is None or observation.safety.get("clearance_m") is None:
            return SafetyDecision(outcome="block", reason="no clearance reading")
        applied, violations = dict(arguments), []
        for axis, (low, high) in WORKSPACE.items():
            if axis in applied:
                value = min(high, max(low, float(applied[axis])))
                if value != applied[axis]:
                    violations.append(f"{axis} {applied[axis]} -> {value}")
                    applied[axis] = value
        if violations:
            return SafetyDecision(
                outcome="clamp", arguments=applied, violations=violations, reason="workspace"
            )
        return SafetyDecision(outcome="allow", arguments=applied)


class MoveTo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: float = Field(description="metres, 0..1 across the table")
    y: float = Field(description="metres, 0..1 along the table")
    z: float = Field(description="metres above the table, 0.02..0.5")


class Grip(BaseModel):
    model_config = ConfigDict(extra="forbid")
    close: bool = Field(description="true closes the gripper, false opens it")


def gantry_tools(robot: ToyGantry) -> list[Tool]:
    def move_to(x: float, y: float, z: float) -> str:
        return _checked(robot.execute("move_to", {"x": x, "y": y, "z": z}))

    def grip(close: bool) -> str:
        return _checked(robot.execute("grip", {"close": close}))

    return [
        Tool(
            "move_to",
            "Move the gripper to x, y, z (metres).",
            move_to,
            input_model=MoveTo,
            physical=True,
        ),
        Tool("grip", "Close or open the gripper.", grip, input_model=Grip, physical=True),
    ]


def _checked(result: ActionResult) -> str:
    if not result.ok:
        raise RuntimeError(result.message)
    return result.message


@contextmanager
def stop_on_ctrl_c() -> Iterator[threading.Event]:
    """First Ctrl-C sets the event (the harness cancels and stops the robot); a second one
    aborts the script."""
    stop = threading.Event()

    def handle(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("\n[stopping: the robot is halted; Ctrl-C again to abort]", flush=True)

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, handle) if main_thread else None
    try:
        yield stop
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def show(event: EventBase) -> None:
    """Print what an operator wants to see; model text streams as it is generated."""
    e: Any = event
    if e.type == "model_delta" and e.kind == "text":
        print(e.delta, end="", flush=True)
    elif e.type == "model_response":
        end_of_text = "\n" if e.text else ""  # the streamed text had no newline
        print(f"{end_of_text}  [{e.model}: {_tokens(e.usage)}]")
    elif e.type == "model_retry":
        print(f"  [retry {e.attempt} in {e.wait_s:.2f} s: {e.message}]")
    elif e.type == "model_error":
        print(f"  [model error {e.kind}: {e.message}]")
    elif e.type == "safety_check" and e.outcome != "allow":
        print(f"  safety {e.outcome}: {', '.join(e.violations) or e.reason}")
    elif e.type == "tool_call":
        print(f"-> {e.name}({e.arguments})")
    elif e.type == "tool_result":
        print(f"<- {e.name}: {e.text[:200]}")
    elif e.type == "done":
        print(f"\n{e.status} after {e.turns} turns ({e.termination_reason})")
        print(f"report: {e.report}")
        print(f"usage: {e.usage.describe()}")


def _tokens(usage: Any) -> str:
    """Token counts, or that there are none (many local servers stream no usage)."""
    if not (usage.prompt_tokens or usage.output_tokens):
        return "usage not reported"
    return f"{usage.prompt_tokens} in, {usage.output_tokens} out"


def fit_to_window(config: HarnessConfig, window: int) -> None:
    """Use ``window`` as the model's context window, with output and compaction reserves
    that fit in it (the defaults assume 100k+ windows; a local server often runs 4-32k)."""
    config.model.context_window = window
    compaction = config.context.compaction
    if compaction.reserve_tokens > window // 4:
        compaction.reserve_tokens = window // 4
        config.model.max_output_tokens = min(config.model.max_output_tokens, window // 8)
        print(
            f"[window {window}: reserving {compaction.reserve_tokens} tokens, "
            f"answers up to {config.model.max_output_tokens}]"
        )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of tokens, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="openai:gpt-4.1-mini", help="model spec")
    parser.add_argument("--max-turns", type=int, default=20)
    parser.add_argument(
        "--context-window",
        type=_positive_int,
        metavar="TOKENS",
        help="the model's context window (needed for models outside the built-in table)",
    )
    parser.add_argument(
        "--timeout-s",
        type=_positive_float,
        metavar="SECONDS",
        help="how long one model call may take, whole answer included (default 60; a "
        "local server on a CPU may need several minutes)",
    )
    parser.add_argument(
        "--vision",
        choices=["auto", "true", "false"],
        default="auto",
        help="send camera images (auto: known models, or probe the server once)",
    )
    parser.add_argument(
        "instruction",
        nargs="?",
        default="Pick up the red cube and lift it to 0.3 m above the table, then report.",
    )
    args = parser.parse_args(argv)

    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    try:
        config.model = parse_model_spec(args.model)
        if args.context_window is not None:
            fit_to_window(config, args.context_window)
        config.model.vision = {"true": True, "false": False}.get(args.vision, "auto")
        if args.timeout_s is not None:
            config.model.timeout_s = args.timeout_s
        model = build_model(config.model)
    except ConfigError as exc:
        print(f"Not running: {exc}", file=sys.stderr)
        print(
            "Set the variable (or pick a local server, e.g. --model ollama:qwen2.5vl:7b) "
            "and run again. Nothing was sent.",
            file=sys.stderr,
        )
        return 2

    robot = ToyGantry()
    done: DoneEvent | None = None
    try:
        harness = Harness(
            config,
            model=model,
            driver=robot,
            safety=BoxEnvelope(),
            physical_tools=gantry_tools(robot),
        )
    except UnknownContextWindowError:
        print(
            f"Not running: the context window of {config.model.name!r} is not in the built-in "
            "table; pass --context-window TOKENS (the window the server runs the model with, "
            "e.g. llama.cpp's --n_ctx). Nothing was sent.",
            file=sys.stderr,
        )
        return 2
    except ConfigError as exc:
        print(f"Not running: {exc}. Nothing was sent.", file=sys.stderr)
        return 2
    with harness, stop_on_ctrl_c() as stop:
        for event in harness.run_stream(
            args.instruction, max_turns=args.max_turns, should_cancel=stop.is_set
        ):
            show(event)
            if isinstance(event, DoneEvent):
                done = event
    return 0 if done is not None and done.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())

"""The ``sim.libero`` driver: LIBERO's Panda in a LIBERO task scene, behind the Driver protocol.

One env is built per task (the slow part, 5-15 s) and reused: :meth:`LiberoSim.reset`
restores one of the task's published initial states in well under a second, and
:meth:`LiberoSim.select` rebuilds only when the task changes. Skills (:mod:`.skills`) are
planned from privileged simulator state and executed on robosuite's OSC controller
(:mod:`.control`); ``describe_motion`` hands the same waypoints to the safety envelope
before anything moves. Observations carry LIBERO's own renders (``agentview`` and the
wrist camera), flipped upright. Success is LIBERO's: :meth:`LiberoSim.goal_predicates`
evaluates the task's BDDL goal predicates with the env's own functions and
:meth:`LiberoSim.goal_achieved` is the env's ``check_success()``.

Every position crossing this driver's boundary is in the robot-base frame (LIBERO's world
frame minus the base's position), so one profile fits every LIBERO scene.

This module owns the driver's state, locking and protocol; building and restoring the env
is :mod:`.env`, planning and running skills :mod:`.execution`, ground truth and LIBERO's
goal predicates :mod:`.truth`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from embodiment.geometry import rounded_point
from embodiment.profile import EmbodimentProfile, load_profile
from embodiment.recording import ControlLayout, ControlRecorder, ControlSink
from embodiment.step_audit import StepAudit
from embodiment.types import (
    ActionResult,
    ActionSpec,
    Motion,
    ObjectInfo,
    Observation,
    validated_call,
)
from scene.perception import Detection, GroundTruthPerception
from worlds.libero.actions import libero_actions
from worlds.libero.config import PROFILE, LiberoConfig, LiberoTask
from worlds.libero.control import CONTROL_HZ, Arm, BudgetExceeded, Interrupted, OffPath
from worlds.libero.env import (
    CAMERAS,
    build_env,
    check_choice,
    close_env,
    gl_current,
    install_step_observers,
    placement_seed,
    quiet_stdout,
    restore_state,
)
from worlds.libero.env import (
    SETTLE_STEPS as SETTLE_STEPS,
)
from worlds.libero.execution import plan_action, run_plan, settle
from worlds.libero.geometry import LiberoGeometry
from worlds.libero.postconditions import LiberoPostConditions
from worlds.libero.scene import SceneCatalog
from worlds.libero.segments import Plan, Refusal
from worlds.libero.skills import SkillPlanner
from worlds.libero.truth import (
    PredicateResult,
    goal_predicate_results,
    scene_detections,
)

__all__ = ["ACTION_NAMES", "CAMERAS", "JOINT_NAMES", "LiberoSim", "PredicateResult"]

JOINT_NAMES = (
    *(f"robot0_joint{index}" for index in range(1, 8)),
    "gripper0_finger_joint1",
    "gripper0_finger_joint2",
)
"""robosuite's names of the joints a control step measures, in that order."""
ACTION_NAMES = ("delta_x", "delta_y", "delta_z", "delta_rx", "delta_ry", "delta_rz", "gripper")
"""The components of LIBERO's 7-D action (robosuite's OSC_POSE with a gripper)."""


class LiberoSim:
    """The ``sim.libero`` driver. Options are :class:`LiberoConfig` fields."""

    judge_name = "libero"
    """Who decides success on this world (``done.evidence.checked_by``)."""

    def __init__(self, profile: EmbodimentProfile | None = None, **options: Any) -> None:
        self.config = LiberoConfig.model_validate(options)
        self.profile = profile if profile is not None else load_profile(PROFILE)
        check_choice(self.config.suite, self.config.task, self.config.init_state)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._env: Any = None
        self._task: LiberoTask | None = None
        self._states: Any = None
        self.init_state = self.config.init_state
        self._arm: Arm | None = None
        self._geo: LiberoGeometry | None = None
        self._planner: SkillPlanner | None = None
        self._catalog = SceneCatalog()
        self._home: tuple[float, float, float] = (0.45, 0.0, 0.27)
        self._motion = "idle"
        self.audit = StepAudit(self.profile)
        """Every physics step against the profile's workspace and zones (:meth:`step_audit`)."""
        self._observers: list[Callable[[tuple[float, float, float]], None]] = [self.audit]
        self._truth: tuple[float, list[Detection]] | None = None
        self._cameras = [c.name for c in self.profile.cameras]
        self._specs = {
            s.name: s
            for s in libero_actions(
                cameras=self._cameras, speed=self.profile.limits.default_speed_m_s
            )
        }
        self.timings: dict[str, float] = {}
        self._control_steps = 0
        """Controller steps sent since the driver was made (the recording's clock)."""
        self._recorder = ControlRecorder(
            ControlLayout(
                rate_hz=CONTROL_HZ,
                state_names=JOINT_NAMES,
                action_names=ACTION_NAMES,
                state_description="measured positions of the Panda's 7 arm joints (rad) and "
                "its 2 finger joints (m)",
                action_description="LIBERO's action: robosuite's OSC_POSE command for the "
                "step (position change, 1.0 = 5 cm; axis-angle orientation change, 1.0 = 0.5 "
                "rad; gripper -1 open, +1 close), held for the step's 25 physics steps",
                cameras=tuple(CAMERAS),
            )
        )

    # ================================================================== lifecycle

    @property
    def connected(self) -> bool:
        return self._env is not None

    @property
    def task(self) -> LiberoTask:
        if self._task is None:
            raise RuntimeError("the LIBERO env is not connected; call connect() first")
        return self._task

    @property
    def language(self) -> str:
        """The task's instruction as LIBERO publishes it."""
        return self.task.language

    @property
    def env(self) -> Any:
        """LIBERO's ``ControlEnv`` (for tests and tools that need the raw env)."""
        return self._env

    def connect(self) -> None:
        if self._env is not None:
            return
        self.select(
            suite=self.config.suite, task=self.config.task, init_state=self.config.init_state
        )

    def select(self, *, suite: str, task: int | str, init_state: int = 0) -> None:
        """Make ``task`` of ``suite`` current at ``init_state``: the env is rebuilt only when
        the task differs from the current one; otherwise it is reset."""
        chosen = check_choice(suite, task, init_state)
        if self._task is None or chosen.bddl_file != self._task.bddl_file:
            self._close_env()
            started = time.perf_counter()
            self._env, self._states = build_env(chosen, self.config)
            self.timings["build_s"] = time.perf_counter() - started
            self._task = chosen
            self._install_observers()
        self.reset(init_state=init_state)

    def reset(self, *, seed: int | None = None, init_state: int | None = None) -> None:
        """Restore a published initial state (``init_state``, else ``seed``, else the
        current one) and let it settle; the arm starts where LIBERO's state puts it."""
        self._require()
        index = init_state if init_state is not None else seed
        index = self.init_state if index is None else int(index)
        count = len(self._states)
        if not 0 <= index < count:
            raise ValueError(f"init_state: the task has initial states 0..{count - 1}, not {index}")
        started = time.perf_counter()
        self._stop.clear()  # a new episode: a stop of the last one does not carry over
        with self._lock, quiet_stdout():
            self._catalog, self._arm, self._geo, self._planner = restore_state(
                self._env,
                self._states[index],
                self._stop,
                self.profile,
                placement_seed(self.config.seed, index),
            )
            self._home = self._arm.ee_position()
            self._arm.on_control = self._record_control_step
            self.audit.restart()  # the episode starts here; LIBERO's own settling is not ours
        self.init_state = index
        self._motion = "idle"
        self._truth = None
        self.timings["reset_s"] = time.perf_counter() - started

    def disconnect(self) -> None:
        self._stop.set()
        with self._lock:
            self._close_env()
            self._task = None

    def close(self) -> None:
        """Alias of :meth:`disconnect`, so a Harness can own the simulator."""
        self.disconnect()

    def __enter__(self) -> LiberoSim:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    def step_audit(self) -> dict[str, Any]:
        """The physics steps since the last reset, and how many of them had the gripper
        outside the profile's workspace or inside a keep-out zone (an evaluation records
        this per episode)."""
        return self.audit.result().model_dump()

    def add_step_observer(self, observer: Callable[[tuple[float, float, float]], None]) -> None:
        """Call ``observer(ee_position)`` (base frame) after every physics step (robosuite
        runs 25 per controller step): for checking a whole motion, step by step."""
        self._observers.append(observer)

    # ================================================================== Driver protocol

    def capabilities(self) -> list[ActionSpec]:
        return list(self._specs.values())

    def stop(self) -> None:
        """Halt a motion in flight (any thread); the arm holds where it is."""
        self._stop.set()

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        self._require()
        args = validated_call(self._specs, action, arguments)
        if isinstance(args, ActionResult):
            return args
        if action == "look":
            return self._look(args.camera)
        self._stop.clear()
        arm = self._arm
        assert arm is not None
        with self._lock:
            plan = self._plan(action, args.model_dump())
            if isinstance(plan, Refusal):
                return ActionResult(ok=False, message=plan.message)
            self._motion = "moving"
            before = self._before(action, args.model_dump())
            arm.steps, arm.budget = 0, self.config.max_steps_per_action * plan.skills
            try:
                reached = run_plan(arm, plan)
                settle(arm, self._speeds)
            except Interrupted:
                self._motion = "stopped"
                arm.budget = None
                with contextlib.suppress(Interrupted, OffPath):
                    self._stop.clear()
                    arm.back_off()  # a stop near a keep-out zone must not coast into it
                    arm.hold(2)
                return ActionResult(
                    ok=False,
                    interrupted=True,
                    message=f"{action} was stopped; the arm holds where it is",
                    applied=self._applied(before),
                )
            except BudgetExceeded as exc:
                self._motion = "idle"
                arm.budget = None
                arm.back_off()  # an arm out of steps beside a zone would coast on into it
                return ActionResult(
                    ok=False, message=f"{action} {exc}", applied=self._applied(before)
                )
            except OffPath as exc:
                self._motion = "idle"
                arm.budget = None
                with contextlib.suppress(Interrupted, BudgetExceeded, OffPath):
                    arm.back_off()  # (done already when a zone's guard stopped it)
                    arm.hold(2)
                return ActionResult(
                    ok=False, message=f"{action} {exc}", applied=self._applied(before)
                )
            finally:
                arm.budget = None
            self._motion = "idle"
            self._truth = None
        applied = self._applied(before)
        applied.update({k: v for k, v in args.model_dump().items() if v is not None})
        short = [label for label, ok in reached if not ok]
        message = f"{action}: {plan.description}"
        if short:
            message += f" (stopped short at: {', '.join(short)})"
        return ActionResult(ok=True, message=message, applied=applied)

    def observe(self) -> Observation:
        self._require()
        with self._lock:
            images = {
                camera.name: self.render(camera.name)
                for camera in self.profile.model_visible_cameras()
            }
            state = self._state()
            detections = self.detections()
            stamp = time.time()
            self._truth = (stamp, detections)
        return Observation(timestamp=stamp, images=images, state=state)

    # ================================================================== extensions

    def control_layout(self) -> ControlLayout:
        """The control steps this driver records (see :mod:`embodiment.recording`)."""
        return self._recorder.layout

    def record_control(self, sink: ControlSink | None, *, cameras: Sequence[str] = ()) -> None:
        """Hand every controller step (20 Hz of simulated time) to ``sink``, with frames of
        ``cameras`` rendered before the step's command is sent; ``None`` stops."""
        with self._lock:
            self._recorder.attach(sink, cameras)

    def _record_control_step(self, action: np.ndarray) -> None:
        """The controller step about to be sent (the caller holds the lock)."""
        step = self._control_steps
        self._control_steps += 1
        if not self._recorder.active or self._arm is None:
            return
        arm = self._arm
        state = [*arm.joint_positions(), *arm.finger_positions()]
        frames = {name: self.render(name) for name in self._recorder.cameras}
        self._recorder.emit(step / CONTROL_HZ, state, action.tolist(), frames)

    def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
        """The gripper waypoints ``execute`` would follow now (nothing moves)."""
        self._require()
        spec = self._specs.get(action)
        args: Any = spec.parse(arguments) if spec is not None else None
        if args is None or action == "look":
            return Motion()
        with self._lock:
            plan = self._plan(action, args.model_dump())
        if isinstance(plan, Refusal):
            return Motion(description=f"refused: {plan.message}", refused=plan.message)
        return Motion(waypoints=list(plan.waypoints), description=plan.description)

    def locate(self, ref: str) -> ObjectInfo | None:
        """Where a ref is (centre and size; base frame), for the envelope's ref checks."""
        if self._geo is None:
            return None
        with self._lock:
            box = self._geo.box(ref)
        if box is None:
            return None
        size = box.size if any(box.size) else None
        return ObjectInfo(position=box.centre, size=size)

    def perception(self) -> Any:
        return GroundTruthPerception(self)

    def post_conditions(self) -> LiberoPostConditions:
        return LiberoPostConditions(self)

    # ================================================================== LIBERO's verdict

    def goal_predicates(self) -> list[PredicateResult]:
        """Every BDDL goal predicate of the task, evaluated by LIBERO on the current state."""
        self._require()
        with self._lock:
            return goal_predicate_results(self._env.env, self._geo, self._catalog)

    def goal_achieved(self) -> bool:
        """The env's own success check (the conjunction of the BDDL goal predicates)."""
        self._require()
        with self._lock:
            return bool(self._env.check_success())

    # ================================================================== ground truth

    @property
    def catalog(self) -> SceneCatalog:
        return self._catalog

    @property
    def geometry(self) -> LiberoGeometry:
        self._require()
        assert self._geo is not None
        return self._geo

    def ee_position(self) -> tuple[float, float, float]:
        assert self._arm is not None
        return self._arm.ee_position()

    def gripper_width(self) -> float:
        assert self._arm is not None
        return self._arm.gripper_width()

    def home_position(self) -> tuple[float, float, float]:
        return self._home

    def held_ref(self) -> str | None:
        return self.geometry.held_ref()

    def detections(self) -> list[Detection]:
        """Ground truth of every catalogued thing, the gripper and the robot (base frame)."""
        geo = self.geometry
        return scene_detections(geo, self._catalog, self.ee_position(), self.gripper_width())

    def latest_detections(self, timestamp: float | None) -> list[Detection]:
        truth = self._truth
        if truth is not None and timestamp is not None and abs(truth[0] - timestamp) < 1e-6:
            return truth[1]
        return self.detections()

    def render(self, camera_name: str) -> np.ndarray:
        """An upright HxWx3 uint8 frame from a profile camera (LIBERO's render, flipped)."""
        self._require()
        libero_name = CAMERAS.get(camera_name)
        if libero_name is None:
            raise ValueError(f"no camera {camera_name!r}; cameras: {', '.join(CAMERAS)}")
        size = self.config.camera_size
        with self._lock, gl_current(self._env):
            frame = self._env.env.sim.render(camera_name=libero_name, width=size, height=size)
        return np.ascontiguousarray(np.asarray(frame, dtype=np.uint8)[::-1, :, :3])

    # ================================================================== internals

    def _plan(self, action: str, args: dict[str, Any]) -> Plan | Refusal:
        planner, arm = self._planner, self._arm
        assert planner is not None and arm is not None
        speed = self.profile.limits.default_speed_m_s
        return plan_action(planner, arm, action, args, self._home, speed)

    def _speeds(self) -> list[float]:
        geo = self.geometry
        return [geo.speed_of(ref) for ref in self._catalog.refs("object")]

    def _before(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        ref = args.get("ref")
        if ref and self._catalog.get(ref) is not None and self._catalog.items[ref].kind == "object":
            box = self.geometry.box(ref)
            return {"start_bottom": box.bottom if box else None}
        return {}

    def _applied(self, before: dict[str, Any]) -> dict[str, Any]:
        applied = dict(before)
        applied.update(
            ee_position=list(rounded_point(self.ee_position())),
            gripper_width=round(self.gripper_width(), 4),
            controller_steps=self._arm.steps if self._arm else 0,
        )
        return applied

    def _look(self, camera: str | None) -> ActionResult:
        names = [camera] if camera else [c.name for c in self.profile.cameras]
        unknown = [n for n in names if n not in CAMERAS]
        if unknown:
            return ActionResult(
                ok=False, message=f"no camera {unknown[0]!r}; cameras: {', '.join(CAMERAS)}"
            )
        images = {name: self.render(name) for name in names}
        return ActionResult(
            ok=True, message=f"took a picture with {', '.join(names)}", data={"images": images}
        )

    def _state(self) -> dict[str, Any]:
        arm = self._arm
        assert arm is not None and self._task is not None
        width = arm.gripper_width()
        return {
            "ee_position": list(rounded_point(arm.ee_position())),
            "ee_yaw": round(arm.ee_yaw(), 3),
            "gripper_width": round(width, 4),
            "gripper": "open" if width > 0.07 else ("closed" if width < 0.002 else "partly closed"),
            "joint_positions": [round(v, 4) for v in arm.joint_positions()],
            "motion": self._motion,
            "suite": self._task.suite,
            "task": self._task.index,
            "init_state": self.init_state,
        }

    def _install_observers(self) -> None:
        """Wrap the env's physics step so step observers see every one of them."""
        install_step_observers(self._env, self._observers, lambda: self._arm)

    def _close_env(self) -> None:
        env, self._env = self._env, None
        self._arm = self._geo = self._planner = None
        close_env(env)

    def _require(self) -> None:
        if self._env is None:
            raise RuntimeError("the LIBERO env is not connected; call connect() first")

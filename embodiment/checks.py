"""``check_driver(driver, profile)``: small named checks that a driver keeps its contract.

In the spirit of Gymnasium's ``check_env``: each check has a name, a status (``pass``,
``fail``, ``warn`` or ``skip``) and a one-line detail, so a driver author sees exactly what
to fix. The motion checks move the robot (to the profile's initial gripper pose and back,
through the safety envelope); pass ``motion=False`` on hardware that is not clear to move.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import EmbodimentProfile
from embodiment.types import ActionResult, ActionSpec, Motion, Observation

__all__ = ["CheckResult", "DriverReport", "check_driver"]

Status = Literal["pass", "fail", "warn", "skip"]
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    detail: str = ""


@dataclass
class DriverReport:
    """Every check's result; ``ok`` when none failed."""

    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(result.status != "fail" for result in self.results)

    def status(self, name: str) -> Status:
        for result in self.results:
            if result.name == name:
                return result.status
        raise KeyError(name)

    def render(self) -> str:
        return "\n".join(f"{r.status:<4}  {r.name}: {r.detail}" for r in self.results)


class _Checks:
    def __init__(self, driver: Any, profile: EmbodimentProfile) -> None:
        self.driver = driver
        self.profile = profile
        self.report = DriverReport()
        self.specs: dict[str, ActionSpec] = {}
        self.observation: Observation | None = None
        self.envelope = SafetyEnvelope(
            profile,
            locator=driver if callable(getattr(driver, "locate", None)) else None,
            observe=driver.observe if callable(getattr(driver, "observe", None)) else None,
        )

    def run(self, name: str, check: Callable[[], tuple[Status, str]]) -> Status:
        try:
            status, detail = check()
        except Exception as exc:
            status, detail = "fail", f"raised {type(exc).__name__}: {exc}"
        self.report.results.append(CheckResult(name, status, detail))
        return status

    # ------------------------------------------------------------------ checks

    def protocol(self) -> tuple[Status, str]:
        needed = ("connect", "observe", "execute", "stop", "disconnect", "capabilities")
        missing = [m for m in needed if not callable(getattr(self.driver, m, None))]
        if missing:
            return "fail", f"missing methods: {', '.join(missing)}"
        return "pass", "connect, observe, execute, stop, disconnect, capabilities"

    def connect(self) -> tuple[Status, str]:
        self.driver.connect()
        return "pass", "connect() returned"

    def capabilities(self) -> tuple[Status, str]:
        specs = self.driver.capabilities()
        if not isinstance(specs, list) or not specs:
            return "fail", f"capabilities() must return a non-empty list, got {specs!r}"
        bad = [s for s in specs if not isinstance(s, ActionSpec)]
        if bad:
            return "fail", f"not ActionSpec: {bad[:3]!r}"
        names = [s.name for s in specs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            return "fail", f"duplicate action names: {', '.join(duplicates)}"
        self.specs = {s.name: s for s in specs}
        physical = [s.name for s in specs if s.physical]
        return "pass", f"{len(specs)} actions ({len(physical)} physical): {', '.join(names)}"

    def observation_type(self) -> tuple[Status, str]:
        observation = self.driver.observe()
        if not isinstance(observation, Observation):
            return "fail", f"observe() returned {type(observation).__name__}, not Observation"
        self.observation = observation
        return "pass", f"{len(observation.images)} images, {len(observation.state)} state keys"

    def cameras(self) -> tuple[Status, str]:
        if self.observation is None:
            return "skip", "no observation"
        problems = []
        declared = {c.name: c for c in self.profile.model_visible_cameras()}
        for name, camera in declared.items():
            frame = self.observation.images.get(name)
            if frame is None:
                problems.append(f"{name}: declared in the profile but missing")
                continue
            array = np.asarray(frame)
            expected = (camera.height, camera.width, 3)
            if array.shape != expected or array.dtype != np.uint8:
                problems.append(
                    f"{name}: got {array.shape} {array.dtype}, profile says {expected} uint8"
                )
        if problems:
            return "fail", "; ".join(problems)
        extra = sorted(set(self.observation.images) - set(declared))
        if extra:
            return "warn", f"images not declared as model-visible cameras: {', '.join(extra)}"
        return "pass", f"{', '.join(declared) or 'no cameras'} match the profile"

    def readings(self) -> tuple[Status, str]:
        if self.observation is None:
            return "skip", "no observation"
        kinds = {"distance": "distance"} if self.profile.mobile else {}
        problems = self.envelope.reading_problems(self.observation, kinds)
        if problems:
            return "fail", "; ".join(problems)
        names = self.envelope.required_readings(kinds)
        return "pass", f"present and finite: {', '.join(names) or 'none required'}"

    def timestamps(self) -> tuple[Status, str]:
        first = self.driver.observe().timestamp
        second = self.driver.observe().timestamp
        if second < first:
            return "fail", f"timestamps went backwards ({first} then {second})"
        if abs(time.time() - second) > 60:
            return "warn", "timestamps are not wall-clock seconds (time.time())"
        return "pass", "non-decreasing"

    def unknown_action(self) -> tuple[Status, str]:
        result = self.driver.execute("__no_such_action__", {})
        if not isinstance(result, ActionResult):
            return "fail", f"execute() returned {type(result).__name__}, not ActionResult"
        if result.ok:
            return "fail", "an unknown action was reported as ok"
        return "pass", f"refused: {result.message[:80]}"

    def _position_action(self) -> tuple[ActionSpec, dict[str, str]] | None:
        for spec in self.specs.values():
            kinds = {kind: arg for arg, kind in (spec.safety or {}).items()}
            if {"position.x", "position.y", "position.z"} <= set(kinds) or "position" in kinds:
                return spec, kinds
        return None

    def _arguments(self, kinds: dict[str, str], point: tuple[float, float, float]) -> dict:
        if "position" in kinds:
            return {kinds["position"]: [round(v, 4) for v in point]}
        return {kinds[f"position.{axis}"]: round(point[i], 4) for i, axis in enumerate("xyz")}

    def _points(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """The initial gripper pose and a point a good step away, inside the envelope."""
        gripper = self.profile.grippers[0]
        start = self.profile.to_world(gripper.initial_position, gripper.frame)
        ws = self.profile.workspace
        centre = tuple((a + b) / 2 for a, b in zip(ws.min, ws.max, strict=True))
        far = self.profile.to_world(centre, ws.frame)  # type: ignore[arg-type]
        step = self.profile.limits.max_step_m * 0.9
        distance = math.dist(start, far)
        if distance > step:
            far = tuple(s + (f - s) * step / distance for s, f in zip(start, far, strict=True))  # type: ignore[assignment]
        return start, far

    def accepts_safe_action(self) -> tuple[Status, str]:
        found = self._position_action()
        if found is None or not self.profile.grippers:
            return "skip", "no action with a target position"
        spec, kinds = found
        start, _ = self._points()
        arguments = self._arguments(kinds, start)
        decision = self.envelope.check_call(
            spec.name, arguments, spec.safety, None, schema=spec.arguments.model_json_schema()
        )
        if decision.outcome == "block":
            return "fail", f"the profile's own initial pose is blocked: {decision.reason}"
        result = self.driver.execute(spec.name, dict(decision.arguments))
        if not result.ok:
            return "fail", f"{spec.name} to the initial pose failed: {result.message}"
        return "pass", f"{spec.name}({arguments}) accepted: {result.message[:60]}"

    def stop_interrupts(self) -> tuple[Status, str]:
        found = self._position_action()
        if found is None or not self.profile.grippers:
            return "skip", "no action with a target position"
        spec, kinds = found
        start, far = self._points()
        decision = self.envelope.check_call(
            spec.name,
            self._arguments(kinds, far),
            spec.safety,
            None,
            schema=spec.arguments.model_json_schema(),
        )
        if decision.outcome == "block":
            return "fail", f"the test motion is blocked by the envelope: {decision.reason}"
        outcome: dict[str, Any] = {}

        def move() -> None:
            try:
                outcome["result"] = self.driver.execute(spec.name, dict(decision.arguments))
            except Exception as exc:  # reported below
                outcome["error"] = exc

        worker = threading.Thread(target=move, daemon=True)
        began = time.monotonic()
        worker.start()
        time.sleep(0.01)
        self.driver.stop()
        stopped_at = time.monotonic()
        worker.join(STOP_TIMEOUT_S)
        if worker.is_alive():
            return "fail", f"execute() still running {STOP_TIMEOUT_S:g} s after stop()"
        if "error" in outcome:
            return "fail", f"execute() raised after stop(): {outcome['error']!r}"
        result: ActionResult = outcome["result"]
        latency = time.monotonic() - stopped_at
        back = self.driver.execute(spec.name, self._arguments(kinds, start))
        if not back.ok:
            return "fail", f"after stop() the next motion was refused: {back.message}"
        if result.interrupted:
            return "pass", f"motion interrupted {latency * 1000:.0f} ms after stop()"
        return (
            "warn",
            f"the motion finished ({time.monotonic() - began:.3f} s) before stop() arrived; "
            "interruption not confirmed (slow the motion down to check it)",
        )

    def motion_description(self) -> tuple[Status, str]:
        """describe_motion answers a Motion ending at the target and moves nothing."""
        describe = getattr(self.driver, "describe_motion", None)
        if not callable(describe):
            return (
                "warn",
                "no describe_motion: the envelope assumes a straight line to position targets "
                "and a path near refs; describe your motions if they go any other way",
            )
        found = self._position_action()
        if found is None or not self.profile.grippers:
            return "skip", "no action with a target position"
        spec, kinds = found
        _, far = self._points()
        before = self.driver.observe().state.get("ee_position")
        motion = describe(spec.name, self._arguments(kinds, far))
        after = self.driver.observe().state.get("ee_position")
        if motion is None:
            return (
                "warn",
                f"describe_motion({spec.name}) answered None: the conservative path applies",
            )
        if not isinstance(motion, Motion):
            return "fail", f"describe_motion returned {type(motion).__name__}, not a Motion"
        if before != after:
            return "fail", f"describe_motion moved the robot ({before} -> {after})"
        if not motion.waypoints or math.dist(motion.waypoints[-1], far) > 0.01:
            end = motion.waypoints[-1] if motion.waypoints else "nowhere"
            return "fail", f"{spec.name} to {far} is described as ending at {end}"
        return "pass", f"{spec.name}: {len(motion.waypoints)} waypoint(s), ends at the target"

    def stop_idle(self) -> tuple[Status, str]:
        began = time.monotonic()
        self.driver.stop()
        elapsed = time.monotonic() - began
        if elapsed > 1.0:
            return "warn", f"stop() on an idle robot took {elapsed:.2f} s"
        return "pass", f"stop() while idle returned in {elapsed * 1000:.1f} ms"


def check_driver(driver: Any, profile: EmbodimentProfile, *, motion: bool = True) -> DriverReport:
    """Run the named checks on ``driver`` against ``profile`` (see the module docstring)."""
    checks = _Checks(driver, profile)
    if checks.run("protocol", checks.protocol) == "fail":
        return checks.report
    if checks.run("connect", checks.connect) == "fail":
        return checks.report
    checks.run("capabilities", checks.capabilities)
    checks.run("observation_type", checks.observation_type)
    checks.run("cameras_match_profile", checks.cameras)
    checks.run("safety_readings", checks.readings)
    checks.run("timestamps", checks.timestamps)
    checks.run("rejects_unknown_action", checks.unknown_action)
    checks.run("describes_motion", checks.motion_description)
    if motion:
        checks.run("accepts_action_inside_profile", checks.accepts_safe_action)
        checks.run("stop_interrupts_motion", checks.stop_interrupts)
    checks.run("stop_when_idle", checks.stop_idle)
    return checks.report

"""Shared fixtures: small fakes of the parts the loop calls (never of the loop itself)."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# MuJoCo fixes its GL backend when it is first imported, and renders on the CPU only
# through EGL (or OSMesa). The worlds set this before they import it; a test module that
# imports MuJoCo itself (small models compiled in the test) would otherwise leave every
# later renderer on that worker with "Default framebuffer is not complete".
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

from embodiment.profile import EmbodimentProfile
from embodiment.types import ActionResult, SafetyDecision
from worlds.fake import FakeRobot

# A test run started as a background job (`bash .ci/run &`) inherits SIGINT ignored, and so
# would every process it starts: the Ctrl-C tests' children would never see their Ctrl-C.
# Restored here (in every xdist worker too); the processes they start get the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
from harness.config import HarnessConfig
from harness.messages import Verdict
from harness.protocols import SceneRefresh
from harness.tools import Tool
from tests.dialects import DIALECTS, Dialect
from tests.tiers import (
    FAST_EXAMPLES,
    FAST_PROFILE,
    FULL_PROFILE,
    SLOW_FILES,
    SLOW_MARKERS,
    SLOW_TESTS,
    is_fast_tier,
    leaves_out_slow,
)
from tests.wire_server import WireServer

# A worker holds every collected test, hypothesis and the SDKs: a heap on which each full
# garbage collection is slow, and the default thresholds run one every few thousand
# allocations (about a fifth of a worker's time in collection alone). Collections are made
# rarer, and what exists once the tests are collected is frozen out of them (it lives until
# the worker exits anyway). Cycles made by the tests are still collected.
gc.set_threshold(50_000, 20, 20)

# Property tests assert what holds, not how fast: hypothesis's default 200 ms deadline per
# example is a timing assertion, and a busy machine failed one (a 320 ms example whose rerun
# took 0.05 ms). Each test's own settings still apply on top.
# The fast tier (``-m "not slow"``) loads its own profile in ``pytest_configure``, before any
# test module is imported, so ``examples(N)`` in the tests scales each count (tests/tiers.py).
settings.register_profile(FULL_PROFILE, deadline=None)
settings.register_profile(
    FAST_PROFILE, parent=settings.get_profile(FULL_PROFILE), max_examples=FAST_EXAMPLES
)
settings.load_profile(FULL_PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    """Loads the fast tier's hypothesis profile when the run is the fast tier (an explicit
    ``--hypothesis-profile`` wins)."""
    if config.getoption("hypothesis_profile", None):
        return
    if is_fast_tier(config.getoption("markexpr", "") or ""):
        settings.load_profile(FAST_PROFILE)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m "not slow"``, a file of :data:`SLOW_FILES` is not imported at all: every
    test in it would be deselected, and importing it costs each worker Ray's, Playwright's
    or the servers' imports."""
    slow_file = collection_path.suffix == ".py" and collection_path.stem in SLOW_FILES
    if slow_file and leaves_out_slow(config.getoption("markexpr", "") or ""):
        return True
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """With xdist, rewrite the test files' asserts once, here, before the workers start.

    Otherwise every worker of a fresh checkout rewrites and compiles every test file at the
    same moment (about 5 s of CPU each, four times over on two cores) and only the first
    one's cache is kept. This uses pytest's own rewriting (private names: if they change,
    this does nothing and the workers rewrite as before)."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        if state.mode != "rewrite" or sys.dont_write_bytecode:
            return
        for source in sorted(Path(__file__).parent.rglob("test_*.py")):
            cache = rewrite.get_cache_dir(source)
            pyc = cache / (source.name[:-3] + rewrite.PYC_TAIL)
            if rewrite.try_makedirs(cache) and rewrite._read_pyc(source, pyc) is None:
                source_hash, code = rewrite._rewrite_test(source, config)
                rewrite._write_pyc(state, code, source_hash, pyc)
    except (AttributeError, ImportError, KeyError, OSError, SyntaxError, TypeError):
        return


@pytest.hookimpl(optionalhook=True)  # without xdist (``-p no:xdist``) the hook is unknown
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: two workers more than this process may use cores. About a third of the
    suite's time is spent waiting (on subprocesses, servers, a browser, Ray), and a worker
    that waits leaves its core to another. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 2


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--hardware", action="store_true", help="run tests that need a robot")


def _tier(item: pytest.Item) -> None:
    """Marks an item by what it starts, and ``slow`` when that keeps it out of the fast
    tier (the README names both tiers)."""
    what = SLOW_FILES.get(item.path.stem)
    if what is not None:
        item.add_marker(getattr(pytest.mark, what))
    test = item.nodeid.split("[", 1)[0]
    if test in SLOW_TESTS or any(item.get_closest_marker(name) for name in SLOW_MARKERS):
        item.add_marker(pytest.mark.slow)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        _tier(item)
    # Files marked ``long`` first (a stable sort): xdist hands files out in this order
    # (``--no-loadscope-reorder`` in pyproject.toml; by default it would sort them by test
    # count), so the longest start at once and the short ones fill in around them, rather
    # than one worker starting a 40-second file while the others have finished.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
    if config.getoption("--hardware"):
        return
    skip = pytest.mark.skip(reason="needs real hardware (--hardware)")
    for item in items:
        if "hardware" in item.keywords:
            item.add_marker(skip)


def _scheduling() -> tuple[int, int] | None:
    try:
        return os.sched_getscheduler(0), os.sched_getparam(0).sched_priority
    except (AttributeError, OSError):  # no POSIX scheduling API here
        return None


@pytest.fixture(autouse=True)
def _scheduling_unchanged() -> Iterator[None]:
    """Every test leaves its worker's thread scheduled as it found it, and a test that
    does not fails (its worker is set back). An AV1 encoder once left a worker a real-time
    task for the rest of the run: it starved the other workers on its core, and every
    process it started inherited it (``tests/export/test_export_video_scheduling.py``)."""
    before = _scheduling()
    yield
    after = _scheduling()
    if after != before and before is not None:
        os.sched_setscheduler(0, before[0], os.sched_param(before[1]))
        pytest.fail(
            f"the test left this thread scheduled as {after} (policy, priority), not {before}"
        )


@pytest.fixture
def server() -> Iterator[WireServer]:
    """A loopback server speaking the OpenAI and Anthropic wire formats."""
    with WireServer() as wire:
        yield wire


@pytest.fixture(params=DIALECTS, ids=lambda d: d.name)
def dialect(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Dialect:
    """Each wire format in turn (its API key set in the environment)."""
    chosen: Dialect = request.param
    chosen.prepare(monkeypatch)
    return chosen


@pytest.fixture
def config() -> HarnessConfig:
    """A config with no embodiment, driver or store on disk (pure loop tests)."""
    return HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )


BARE_ARM = EmbodimentProfile.model_validate(
    {
        "name": "bare_arm",
        "kind": "arm",
        "base": {"footprint": {"shape": "box", "size": [0.1, 0.1]}, "mobility": "fixed"},
        "workspace": {"frame": "world", "min": [-1, -1, -1], "max": [1, 1, 1]},
        "sensors": ["rgb"],
        "cameras": [
            {
                "name": "front",
                "frame": "world",
                "position": [1, 0, 0],
                "look_at": [0, 0, 0],
                "width": 64,
                "height": 48,
                "model_visible": True,
            }
        ],
        "grippers": [
            {
                "name": "hand",
                "kind": "parallel",
                "frame": "world",
                "initial_position": [0, 0, 0],
                "max_opening_m": 0.08,
            }
        ],
        "limits": {"max_speed_m_s": 1.0, "payload_kg": 1, "max_force_n": 50, "max_step_m": 2},
    }
)


"""The loop tests' arm: one 64 x 48 camera, the gripper at the origin, no joints."""

BARE_OPTIONS: dict[str, Any] = {"readings": {"clearance_m": 1.0}}
"""A fixed clearance reading, which :class:`BoxSafety` requires."""


def fake_robot(log: list[str] | None = None, *, motion_s: float = 0.0) -> FakeRobot:
    """The fake world's robot on :data:`BARE_ARM`: ``log`` records its protocol calls, and
    each motion takes ``motion_s`` (one step; ``stop()`` from another thread ends it)."""
    step_m = 100.0 if motion_s else 0.01
    return FakeRobot(BARE_ARM, log=log, step_s=motion_s, step_m=step_m, **BARE_OPTIONS)


def when_set(event: threading.Event, action: Callable[[], object]) -> threading.Thread:
    """Run ``action`` on a thread of its own once ``event`` is set (a hang guard of 60 s:
    the action runs then anyway, and the test's own assertions say what never happened)."""

    def wait_then_act() -> None:
        event.wait(60)
        action()

    thread = threading.Thread(target=wait_then_act, daemon=True)
    thread.start()
    return thread


def move_to_tool(driver: FakeRobot, *, timeout_s: float | None = None) -> Tool:
    from pydantic import BaseModel, ConfigDict

    class MoveTo(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: float
        y: float
        z: float

    def handler(x: float, y: float, z: float) -> str:
        result = driver.execute("move_to", {"x": x, "y": y, "z": z})
        if not result.ok:
            raise RuntimeError(result.message)
        return f"move_to done: {result.message}"

    return Tool(
        "move_to",
        "Move the gripper to x, y, z (metres).",
        handler,
        input_model=MoveTo,
        physical=True,
        timeout_s=timeout_s,
        safety={"x": "position.x", "y": "position.y", "z": "position.z"},
    )


class StubbornRobot(FakeRobot):
    """A fake arm whose ``execute`` ignores ``stop()`` and returns only once ``release``
    is set; ``running`` and ``most_at_once`` count overlapping commands."""

    def __init__(self, profile: Any) -> None:
        super().__init__(profile)
        self.release = threading.Event()
        self.running = 0
        self.most_at_once = 0
        self._count = threading.Condition()

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        with self._count:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            self.release.wait(60)
            return super().execute(action, arguments)
        finally:
            with self._count:
                self.running -= 1
                self._count.notify_all()

    def wait_idle(self, timeout_s: float = 10.0) -> None:
        with self._count:
            self._count.wait_for(lambda: not self.running, timeout_s)


@pytest.fixture
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler that ignores its timeout is abandoned after 0.3 s, not 5 s, and the task's
    end waits 0.1 s, not 1 s, for a pending command: the same rules, sooner."""
    from harness.runtime import robot
    from harness.runtime.phases import tool_thread

    monkeypatch.setattr(tool_thread, "GRACE_S", 0.3)
    monkeypatch.setattr(robot, "FINAL_WAIT_S", 0.1)


class BoxSafety:
    """Clamps positions into a box; blocks when the clearance reading is missing."""

    def __init__(self, low: float = -0.5, high: float = 0.5) -> None:
        self.low, self.high = low, high
        self.calls = 0

    def check(self, tool: Tool, arguments: Mapping[str, Any], observation: Any) -> SafetyDecision:
        self.calls += 1
        if observation is None or observation.safety.get("clearance_m") is None:
            return SafetyDecision(
                outcome="block",
                violations=["missing clearance reading"],
                reason="no clearance reading",
            )
        args = dict(arguments)
        clamped = []
        for key in ("x", "y", "z"):
            if key in args:
                value = min(self.high, max(self.low, args[key]))
                if value != args[key]:
                    clamped.append(f"{key} {args[key]} -> {value}")
                    args[key] = value
        if clamped:
            return SafetyDecision(
                outcome="clamp", arguments=args, violations=clamped, reason="workspace bounds"
            )
        return SafetyDecision(outcome="allow", arguments=args)


class RecordingScene:
    def __init__(self, log: list[str], *, fail: bool = False) -> None:
        self.log = log
        self.fail = fail
        self.verdicts: list[tuple[str, str]] = []

    def refresh(self, observation: Any, *, focus: str) -> SceneRefresh:
        self.log.append("scene")
        if self.fail:
            raise RuntimeError("scene graph exploded")
        return SceneRefresh(brief="Scene: red_cube_1 at (0.100, 0.200, 0.020)")

    def tools(self) -> list[Tool]:
        return []

    def on_verdict(self, tool: str, arguments: Mapping[str, Any], verdict: Verdict) -> None:
        self.verdicts.append((tool, verdict.status))


@pytest.fixture
def log() -> list[str]:
    return []


# --------------------------------------------------------------------------- simulator


@pytest.fixture(scope="module")
def shared_sim() -> Any:
    """One PyBullet tabletop per test module (skipped without the [sim] extra)."""
    pytest.importorskip("pybullet", reason="the simulator needs the [sim] extra")
    from worlds.tabletop.simulator import TabletopSim

    sim = TabletopSim(seed=0)
    sim.connect()
    yield sim
    sim.disconnect()


@pytest.fixture
def sim(shared_sim: Any) -> Any:
    """The module's simulator, reset: seed-0 layout, arm home, no faults, fast motions."""
    shared_sim.reset()
    shared_sim.inject_faults()
    shared_sim.real_time_factor = 0.0
    return shared_sim

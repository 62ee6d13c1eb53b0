"""``harness demo``'s flags against each world's contract, over every combination.

Hypothesis draws a world (or none: the default world) and any subset of the demo's flags.
A flag the world does not take is always a usage error naming the flag and the world that
takes it; flags the default world takes always become its driver overrides. An oracle
written here from the worlds' own declared flags decides which, not the CLI's code.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import build_parser
from harness.cli.demo import demo_config
from harness.errors import UsageError
from tests.tiers import examples
from worlds.contract import DEMO_FLAGS
from worlds.registry import DEFAULT_WORLD, load_world

ROOT = Path(__file__).resolve().parents[2]
VALUES = {
    "seed": ["--seed", "5"],
    "scene": ["--scene", "hidden_cube"],
    "gui": ["--gui"],
    "drop_first_grasp": ["--drop-first-grasp", "red_cube_1"],
    "suite": ["--suite", "libero_goal"],
    "task": ["--task", "1"],
    "init_state": ["--init-state", "0"],
}
DEMO_WORLDS = ["tabletop", "libero", "so101"]
TRIES = {"count": 0, "refused": 0}


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    world=st.sampled_from([None, *DEMO_WORLDS]),
    flags=st.lists(st.sampled_from(sorted(DEMO_FLAGS)), unique=True, max_size=4),
)
def test_a_flag_is_taken_by_its_world_or_refused_naming_who_takes_it(
    world: str | None, flags: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DISPLAY", ":99")  # --gui is checked for a display, not opened here
    chosen = world or DEFAULT_WORLD
    takes = load_world(chosen).demo.flags  # type: ignore[union-attr]
    foreign = [f for f in DEMO_FLAGS if f in flags and f not in takes]  # in flag order
    if not foreign and chosen != DEFAULT_WORLD:
        return  # a benchmark world would look its task up: not what this checks
    argv = ["demo", *(["--world", world] if world else [])]
    for flag in flags:
        argv += VALUES[flag]
    args = build_parser().parse_args(argv)
    TRIES["count"] += 1
    if foreign:
        with pytest.raises(UsageError) as refused:
            demo_config(args)
        TRIES["refused"] += 1
        text = str(refused.value)
        owners = [w for w in DEMO_WORLDS if foreign[0] in load_world(w).demo.flags]  # type: ignore[union-attr]
        assert text.startswith(f"{DEMO_FLAGS[foreign[0]]} is a {'/'.join(owners)} flag;"), text
        assert (
            (f"--world {chosen} takes" in text) if world else (f"add --world {owners[0]}" in text)
        )
        assert "\n" not in text
        return
    config = demo_config(args)
    options = config.driver.model_extra or {}  # type: ignore[union-attr]
    assert ("seed" in flags) == (options.get("seed") == 5)
    assert ("gui" in flags) == bool(options.get("gui"))
    assert ("scene" in flags) == (options.get("variant") == "hidden_cube")
    assert ("drop_first_grasp" in flags) == ("faults" in options)
    assert config.subagents.enabled


def test_the_property_ran_both_ways() -> None:
    """Guards the property test: it was run (same worker, same module) and refused some."""
    if TRIES["count"] == 0:
        pytest.skip("the property test did not run in this process")
    assert TRIES["refused"] > 0

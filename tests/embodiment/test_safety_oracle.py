"""No command outside the envelope reaches the hardware, for any tool source.

Hypothesis drives the real loop (Harness + ScriptedModel) with random physical calls and
random start states, for each way a command reaches hardware (tools generated from a
driver that describes its motions, the same driver without descriptions,
``@tool(physical=True)`` functions, and a stdio MCP server's physical tools), and an
oracle with its own geometry (``benchmarks/lib/safety_oracle.py``) judges every command the
hardware executed. The example count is bounded for CI; ``python -m
benchmarks.safety_fuzz`` runs the same campaign at 20,000+ calls and prints the counts.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.lib.fuzz_arms import PROFILES
from benchmarks.lib.fuzz_campaign import Tally
from benchmarks.lib.fuzz_scenarios import Scenario, scenarios
from benchmarks.lib.safety_oracle import Command, judge
from benchmarks.safety_fuzz import Campaign
from harness.providers import call
from tests.tiers import examples, floor

pytestmark = pytest.mark.skipif(  # found, not imported: the campaign's MCP server loads it
    importlib.util.find_spec("mcp") is None, reason="needs the [mcp] extra"
)


@pytest.fixture(scope="module")
def campaign() -> Iterator[Campaign]:
    with Campaign() as running:
        yield running


TOTALS: dict[str, Tally] = {}


def attack(campaign: Campaign, source: str, scenario: Scenario) -> None:
    tally = campaign.run(source, scenario)
    TOTALS.setdefault(source, Tally()).add(tally)
    assert tally.escaped == 0, "\n".join(tally.escapes)


BOUNDED = settings(
    max_examples=examples(30),
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every CI run; the benchmark explores widely
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@BOUNDED
@given(st.one_of(scenarios("driver", "panda"), scenarios("driver", "yawed")))
def test_driver_tools_that_describe_their_motion(campaign: Campaign, scenario: Scenario) -> None:
    attack(campaign, "driver", scenario)


@BOUNDED
@given(st.one_of(scenarios("conservative", "panda"), scenarios("conservative", "yawed")))
def test_driver_tools_without_motion_descriptions(campaign: Campaign, scenario: Scenario) -> None:
    attack(campaign, "conservative", scenario)


@BOUNDED
@given(st.one_of(scenarios("function", "panda"), scenarios("function", "yawed")))
def test_physical_tool_functions(campaign: Campaign, scenario: Scenario) -> None:
    attack(campaign, "function", scenario)


INSIDE_MCP = Scenario(
    "panda",
    None,
    None,
    (
        call("move_to", x=0.35, y=0.0, z=1.05, speed=0.2),
        call("move_to", x=0.40, y=0.05, z=1.0),  # speed left out: the server's 1.5 clamped
        call("grip", force=10.0, width=0.04),
        call("move_to", x=0.42, y=-0.05, z=0.98, speed=0.1),
        call("move_to", x=0.38, y=0.0, z=1.02, speed=0.3),
    ),
)
"""Calls inside the envelope, so the campaign always sees MCP commands executed, whatever
the generated examples are (Hypothesis mixes literals of loaded modules into them)."""


@pytest.mark.servers  # the campaign's MCP arm is a server process: not in the fast tier
@settings(BOUNDED, max_examples=examples(20))
@given(scenarios("mcp", "panda"))
@example(INSIDE_MCP)
def test_mcp_server_physical_tools(campaign: Campaign, scenario: Scenario) -> None:
    attack(campaign, "mcp", scenario)


def test_the_campaign_really_attacked() -> None:
    """Runs after the four above: enough calls were tried, executed and blocked that a
    zero escape count means something. The fast tier runs the three in-process sources
    (the MCP server's is a server process), the whole suite all four."""
    if len(TOTALS) < 3:
        pytest.skip("run with the campaign tests above")
    for source, tally in TOTALS.items():
        print(source, tally)
        # The full suite's floors; the fast tier runs a fifth of the examples (tests/tiers.py).
        assert tally.tried >= floor(40), (source, tally)
        assert tally.executed >= floor(5), (source, tally)
        assert tally.blocked >= floor(10), (source, tally)
        assert tally.allowed + tally.clamped >= floor(5), (source, tally)


# ---------------------------------------------------------------------- the oracle itself


def test_the_oracle_catches_what_it_must() -> None:
    """The judge is not vacuous: each kind of escape it exists for is reported."""
    profile = PROFILES["panda"]()
    home = [0.307, 0.0, 1.11]
    joints = [0.0, 0.0, 0.0, -1.5, 0.0, 1.8, 0.0]
    move = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}

    def problems(**overrides: Any) -> list[str]:
        fields: dict[str, Any] = {
            "tool": "move_to",
            "arguments": {},
            "ee_before": home,
            "joints_before": joints,
            "segments": [],
            "kinds": move,
        }
        fields.update(overrides)
        return judge(profile, Command(**fields))

    assert problems(segments=[(home, [0.5, 0.0, 0.9])]) == []
    assert problems(segments=[(home, [0.81, 0.0, 0.9])])  # outside the workspace
    assert problems(segments=[([0.23, -0.35, 0.7], [0.23, 0.35, 0.7])])  # through the base
    assert problems(segments=[([0.25, -0.3, 0.7], [0.25, 0.3, 0.7])])  # within the margin
    assert problems(segments=[([0.2, 0.0, 0.7], [0.21, 0.0, 0.7])])  # deeper into the zone
    assert problems(ee_before=[0.2, 0.0, 0.7], segments=[([0.2, 0.0, 0.7], [0.6, 0.0, 0.9])]) == []
    corner = [0.2, -0.45, 0.64]
    assert problems(ee_before=corner, segments=[(corner, [0.78, 0.45, 1.2])])  # too long a step
    assert problems(arguments={"speed": 0}) and problems(arguments={"speed": 0.9})
    assert problems(arguments={"speed": math.nan})
    assert problems(
        tool="set_joints", arguments={"joints": [3.0, *joints[1:]]}, kinds={"joints": "joints"}
    )
    assert problems(
        tool="set_joints", arguments={"joints": [1.6, *joints[1:]]}, kinds={"joints": "joints"}
    )
    assert problems(tool="home", kinds=None)  # an undeclared tool ran


@pytest.mark.servers
def test_a_declared_call_reaches_the_mcp_arm_and_its_log(campaign: Campaign) -> None:
    """The MCP path really executes allowed calls (so zero escapes there is not zero work)."""
    tally = campaign.run(
        "mcp",
        Scenario(
            "panda",
            None,
            None,
            (
                call("move_to", x=0.5, y=0.0, z=0.9, speed=0.2),
                call("beep"),
                call("move_arm", x=0.5, y=0.0, z=0.9, frame="base"),
            ),
        ),
    )
    assert (tally.tried, tally.allowed, tally.blocked, tally.executed, tally.escaped) == (
        3,
        2,
        1,
        2,
        0,
    )

"""Attack the safety envelope through the real loop, for every tool source, and count.

    python -m benchmarks.safety_fuzz [--calls 20000] [--seed 0] [--sources driver,mcp,...]

A ScriptedModel sends random physical calls (targets on, near and beyond the workspace
boundary and the keep-out zones, non-finite numbers, zero and huge speeds and forces,
joints past their limits, refs of objects outside the workspace, below the table, inside
a zone or too heavy, undeclared arguments and tools) through ``Harness.run_stream`` from
random start states (the gripper inside a zone's margin, outside the workspace, joints
past their limits). Each source is a different way a command reaches hardware:

- ``driver``: tools generated from a driver that describes its motions (``FakeRobot``,
  whose pick and place approach, descend, lift and carry like the simulator's);
- ``conservative``: the same driver when it cannot describe its motions (the envelope's
  conservative path applies);
- ``function``: ``@tool(physical=True)`` functions driving the arm;
- ``mcp``: a stdio MCP server with physical tools (``tests/fixtures/mcp_arm_server.py``),
  fully, partly and not declared, including schemas the envelope cannot enumerate.

The driver-side sources run on the built-in Panda profile and on a yawed arm whose
workspace and one zone are in its base frame. Every command the hardware executed is
judged by :mod:`benchmarks.lib.safety_oracle` (its own geometry, not the envelope's); an
escape is a command it finds outside the profile. Prints calls tried, allowed, clamped,
blocked, rejected by the tool schema before the envelope, executed and escaped, per
source and in total. ``tests/embodiment/test_safety_oracle.py`` runs the same campaign with a
bounded example count (and hypothesis shrinking an escape to its smallest call list).
The classes of issue 25 (left-out arguments with unsafe defaults, joint targets through the
URDF's kinematics, base sweeps, broken profiles) are in :mod:`benchmarks.safety_fuzz_body`.

The arms and tool sources are in :mod:`benchmarks.lib.fuzz_arms`, the random scenarios in
:mod:`benchmarks.lib.fuzz_scenarios`, what both fuzzers share in
:mod:`benchmarks.lib.fuzz_campaign`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.lib.fuzz_arms import (  # noqa: E402
    ARM_SERVER,
    FUNCTION_KINDS,
    MCP_HOME,
    MCP_KINDS,
    MCP_PHYSICAL,
    MCP_SAFETY,
    PROFILES,
    RecordingArm,
    StateFileDriver,
    function_tools,
    fuzz_objects,
    use_profile,
)
from benchmarks.lib.fuzz_campaign import (  # noqa: E402
    Tally,
    campaign_config,
    generate_calls,
    tally_events,
)
from benchmarks.lib.fuzz_scenarios import Scenario, scenarios  # noqa: E402
from benchmarks.lib.safety_oracle import Command, judge  # noqa: E402
from embodiment.envelope import SafetyEnvelope  # noqa: E402
from embodiment.profile import EmbodimentProfile  # noqa: E402
from harness import Harness  # noqa: E402
from harness.events import ToolCallEvent  # noqa: E402
from harness.providers import ScriptedModel, reply  # noqa: E402
from harness.world.physical import physical_tools  # noqa: E402

__all__ = ["ARM_PROFILES", "SOURCES", "Campaign", "main"]


# ---------------------------------------------------------------------- running


class Campaign:
    """Runs scenarios of every source; keeps one MCP arm server for the whole campaign."""

    def __init__(self) -> None:
        self._manager: Any = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._log_offset = 0

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._manager is not None:
            self._manager.close()
        if self._folder is not None:
            self._folder.cleanup()

    def run(self, source: str, scenario: Scenario) -> Tally:
        if source == "mcp":
            return self._run_mcp(scenario)
        return self._run_arm(source, scenario)

    def _arm(self, source: str, profile: EmbodimentProfile, scenario: Scenario) -> RecordingArm:
        options: dict[str, Any] = {
            "objects": fuzz_objects(profile),
            "object_mass_kg": {"heavy_box": 5.0},
        }
        if source in ("conservative", "function"):
            # Within the conservative assumption: never above approach_height_m of a ref.
            options.update(describes_motion=source != "conservative", approach_m=0.10)
        arm = RecordingArm(profile, **options)
        if scenario.ee is not None:
            arm.ee = list(scenario.ee)
        if scenario.joints is not None:
            arm.joints = list(scenario.joints)
        return arm

    def _run_arm(self, source: str, scenario: Scenario) -> Tally:
        profile = PROFILES[scenario.profile]()
        arm = self._arm(source, profile, scenario)
        if source == "function":
            tools, physical_parts = function_tools(arm), []
            kinds: dict[str, dict[str, str] | None] = dict(FUNCTION_KINDS)
        else:
            specs = [s for s in arm.capabilities() if source != "conservative" or s.name != "home"]
            physical_parts = physical_tools(arm, specs=specs)
            tools, kinds = [], {}
        harness = Harness(
            campaign_config(),
            model=ScriptedModel([*scenario.calls, reply("done")]),
            driver=arm,
            tools=tools,
            physical_tools=physical_parts,
            safety=SafetyEnvelope(profile, locator=arm, observe=arm.observe),
        )
        with harness:
            events = list(harness.run_stream("fuzz"))
            physical = {t.name for t in harness.tools if t.physical}
        tally = tally_events(events, physical, scenario.calls)
        for command in arm.recorded:
            if source == "function":
                # The arm records what it executed; which tool sent it decides whether it
                # was declared (wiggle and nudge must never get this far).
                command.kinds = arm._specs[command.tool].safety
            self._judge(profile, command, tally, events)
        if source == "function":
            ran = [e.name for e in events if isinstance(e, ToolCallEvent)]
            for name in ran:
                if name in physical and name not in kinds:
                    tally.escaped += 1
                    tally.escapes.append(f"{name}: an undeclared @tool reached the hardware")
        return tally

    @contextmanager
    def _server(self) -> Iterator[Any]:
        if self._manager is None:
            from harness.config import MCPServerConfig
            from harness.mcp import MCPManager

            self._folder = tempfile.TemporaryDirectory(prefix="safety_fuzz_")
            folder = Path(self._folder.name)
            config = MCPServerConfig(
                name="arm",
                command=sys.executable,
                args=[
                    str(ARM_SERVER),
                    "--state",
                    str(folder / "state.json"),
                    "--log",
                    str(folder / "log.jsonl"),
                ],
                physical=MCP_PHYSICAL,
                safety=MCP_SAFETY,
                call_timeout_s=20,
            )
            self._manager = MCPManager.start_servers([config], base_dir=folder)
        yield self._manager

    def _run_mcp(self, scenario: Scenario) -> Tally:
        profile = PROFILES["panda"]()
        with self._server() as manager:
            assert self._folder is not None
            folder = Path(self._folder.name)
            start = list(scenario.ee) if scenario.ee is not None else list(MCP_HOME)
            joints = list(scenario.joints) if scenario.joints is not None else None
            manager.call("arm", "teleport", {"ee": start, "joints": joints})
            log = folder / "log.jsonl"
            self._log_offset = log.stat().st_size if log.exists() else 0
            driver = StateFileDriver(folder / "state.json")
            harness = Harness(
                campaign_config(),
                model=ScriptedModel([*scenario.calls, reply("done")]),
                driver=driver,
                tools=[t for t in manager.tools() if t.name != "teleport"],
                safety=SafetyEnvelope(profile, observe=driver.observe),
            )
            with harness:
                events = list(harness.run_stream("fuzz"))
                physical = {t.name for t in harness.tools if t.physical}
            tally = tally_events(events, physical, scenario.calls)
            entries = []
            if log.exists():
                with log.open() as handle:
                    handle.seek(self._log_offset)
                    entries = [json.loads(line) for line in handle.read().splitlines()]
            for entry in entries:
                command = Command(
                    entry["tool"],
                    entry["arguments"],
                    entry["before"]["ee"],
                    entry["before"]["joints"],
                    [tuple(s) for s in entry["segments"]],  # type: ignore[misc]
                    kinds=MCP_KINDS.get(entry["tool"]),
                )
                self._judge(profile, command, tally, events)
            return tally

    def _judge(
        self, profile: EmbodimentProfile, command: Command, tally: Tally, events: list[Any]
    ) -> None:
        tally.executed += 1
        problems = judge(profile, command)
        if problems:
            tally.escaped += 1
            tally.escapes.append("; ".join(problems))


SOURCES = ("driver", "conservative", "function", "mcp")
ARM_PROFILES: dict[str, tuple[str, ...]] = {
    "driver": ("panda", "yawed"),
    "conservative": ("panda", "yawed"),
    "function": ("panda", "yawed"),
    "mcp": ("panda",),
}


# ---------------------------------------------------------------------- the command


def _campaign(sources: list[str], calls: int, seed: int) -> dict[str, Tally]:
    """About ``calls`` physical calls, shared out over the sources and their profiles."""
    results: dict[str, Tally] = {}
    with Campaign() as campaign:
        for source in sources:
            tally = results.setdefault(source, Tally())
            profiles = ARM_PROFILES[source]
            for index, profile_name in enumerate(profiles):
                goal = calls // len(sources) // len(profiles)
                part = Tally()
                strategy = scenarios(source, profile_name)
                round_seed = seed * 1000 + SOURCES.index(source) * 10 + index
                run = _runner(campaign, source, part)
                while part.tried < goal:
                    examples = max(1, (goal - part.tried) // 4)
                    generate_calls(strategy, examples, round_seed, run)
                    round_seed += 100_000
                tally.add(part)
    return results


def _runner(campaign: Campaign, source: str, part: Tally) -> Callable[[Scenario], None]:
    def run(scenario: Scenario) -> None:
        part.add(campaign.run(source, scenario))

    return run


def render(results: dict[str, Tally], seconds: float) -> str:
    total = Tally()
    lines = [
        "| source | tried | allowed | clamped | blocked | rejected by schema | executed "
        "| escaped |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for source, tally in results.items():
        total.add(tally)
        lines.append(_row(source, tally))
    lines.append(_row("**all**", total))
    lines.append("")
    lines.append(f"{seconds:.1f} s")
    if total.escapes:
        lines.append("")
        lines.append(f"first escapes ({len(total.escapes)}):")
        lines.extend(f"- {text[:300]}" for text in total.escapes[:10])
    return "\n".join(lines)


def _row(name: str, t: Tally) -> str:
    return (
        f"| {name} | {t.tried} | {t.allowed} | {t.clamped} | {t.blocked} | {t.rejected} | "
        f"{t.executed} | {t.escaped} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="physical calls to try")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument(
        "--profile",
        help="attack this arm profile (a name, a world's profile such as so101, or a path) "
        "with the driver, conservative and function sources, instead of the Panda",
    )
    args = parser.parse_args(argv)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    if args.profile:
        if "mcp" in sources and args.sources != ",".join(SOURCES):
            parser.error("--profile: the mcp source's arm server is a Panda; leave mcp out")
        sources = [s for s in sources if s != "mcp"]
        use_profile(args.profile)
        for source in sources:
            ARM_PROFILES[source] = ("panda",)
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        parser.error(f"unknown source(s) {', '.join(unknown)}; expected {', '.join(SOURCES)}")
    started = time.perf_counter()
    results = _campaign(sources, args.calls, args.seed)
    print(render(results, time.perf_counter() - started))
    return 1 if any(t.escaped for t in results.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How a seeded session trace (:mod:`benchmarks.lib.session_trace`) is generated.

The shape follows what an arm on a tabletop produces over a long task: short model
texts, one tool call per turn, mostly 0.2-2 KB tool results (grasp telemetry, object
lists, camera descriptions) and occasional 5-50 KB sensor or log dumps. With
``TraceSpec.tasks > 1`` the session is several tasks in a row, each with its own
instruction and final report, and facts planted in one task may be probed in a later one.
Everything is derived from one seed, so every policy sees byte-identical input and a run
is reproducible on any machine.
"""

from __future__ import annotations

import json
import random
from typing import Any

from benchmarks.lib.session_trace import (
    DUMP_TOOLS,
    FactKind,
    PlantedFact,
    Trace,
    TraceSpec,
    TraceTask,
    TraceTurn,
)

__all__ = ["generate_trace"]

_COLOURS = ("red", "green", "blue", "yellow", "orange", "purple")
_SHAPES = ("cube", "cup", "block", "cylinder")
_FACT_PARTS = ("bracket", "spacer", "caliper", "hex_key", "shim", "clamp", "bushing", "gauge")
_FACT_PLACES = ("drawer 3", "the rack behind tray_1", "the tool shelf", "bin 7", "the charger dock")
_FAULTS = (
    "joint 5 torque limit exceeded",
    "gripper finger encoder mismatch",
    "wrist camera frame dropped",
    "base clearance sensor timeout",
    "joint 2 following error",
)


class _World:
    """A small tabletop whose objects and arm pose drift as the session goes on."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.objects: dict[str, dict[str, Any]] = {}
        for index in range(12):
            colour = _COLOURS[index % len(_COLOURS)]
            shape = _SHAPES[index % len(_SHAPES)]
            ref = f"{colour}_{shape}_{index + 1}"
            self.objects[ref] = {
                "label": f"{colour} {shape}",
                "pos": [rng.uniform(0.30, 0.70), rng.uniform(-0.30, 0.30), 0.645],
                "on": "table_1",
            }
        self.trays = ["tray_1", "tray_2", "tray_3"]
        self.ee = [0.30, 0.00, 0.40]
        self.gripper = "open"
        self.holding: str | None = None
        self.focus: list[str] = list(self.objects)[:6]

    def refs(self) -> list[str]:
        return list(self.objects)

    def state(self) -> dict[str, Any]:
        return {
            "ee_position": [round(v, 3) for v in self.ee],
            "gripper": self.gripper,
            "holding": self.holding or "nothing",
        }

    def brief(self, timestamp: float) -> str:
        held = f"holding {self.holding}" if self.holding else "holding nothing"
        x, y, z = self.ee
        lines = [
            f"Scene (world frame, metres; t={timestamp:.3f})",
            f"robot: gripper at ({x:.3f}, {y:.3f}, {z:.3f}), {self.gripper}, {held}",
            f"objects (6 of {len(self.objects) + len(self.trays)} shown, most relevant first):",
        ]
        for ref in self.focus[:6]:
            obj = self.objects[ref]
            ox, oy, oz = obj["pos"]
            where = "held" if ref == self.holding else f"on {obj['on']}"
            lines.append(
                f"- {ref}: {obj['label']} at ({ox:.3f}, {oy:.3f}, {oz:.3f}) size "
                f"0.040x0.040x0.040; {where}; conf 1.00; seen 0.0s ago"
            )
        hidden = len(self.objects) + len(self.trays) - 6
        lines.append(f"+{hidden} more objects: cubes, cups, trays; use find_objects")
        return "\n".join(lines)


class _Writer:
    """Tool outputs of realistic shape; sizes drawn from the spec's ranges."""

    def __init__(self, rng: random.Random, world: _World, spec: TraceSpec) -> None:
        self.rng = rng
        self.world = world
        self.spec = spec

    def _pad(self, head: str, target: int, line: Any) -> str:
        lines = [head]
        size = len(head)
        index = 0
        while size < target:
            text = line(index)
            lines.append(text)
            size += len(text) + 1
            index += 1
        return "\n".join(lines)

    def _telemetry(self, index: int) -> str:
        r = self.rng
        return (
            f"t+{0.05 * (index + 1):.2f}s ee=({r.uniform(0.2, 0.8):.3f}, "
            f"{r.uniform(-0.4, 0.4):.3f}, {r.uniform(0.6, 0.9):.3f}) "
            f"force={r.uniform(0, 15):.2f}N width={r.uniform(0, 0.08):.3f}m"
        )

    def small(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        r, w = self.rng, self.world
        target = r.randint(*self.spec.small_chars)
        if tool == "pick":
            ref = arguments["ref"]
            if r.random() < 0.1:
                head = f"pick {ref}: failed, object slipped ({r.uniform(5, 20):.1f} mm)"
            else:
                w.holding, w.gripper = ref, "closed"
                head = f"pick {ref}: grasped, force {r.uniform(8, 14):.1f} N"
            return self._pad(head, target, self._telemetry), False
        if tool == "place":
            ref, tray = arguments["ref"], arguments["target"]
            if ref in w.objects:
                w.objects[ref]["on"] = tray
            w.holding, w.gripper = None, "open"
            head = f"place {ref} in {tray}: released, settle {r.uniform(0.1, 0.6):.2f} s"
            return self._pad(head, target, self._telemetry), False
        if tool == "move_to":
            w.ee = [arguments["x"], arguments["y"], arguments["z"]]
            if r.random() < 0.04:
                return "move_to: target outside the reachable workspace", True
            head = f"move_to: reached target, error {r.uniform(0.5, 3):.1f} mm"
            return self._pad(head, target, self._telemetry), False
        if tool == "look":
            seen = ", ".join(w.focus[:4])
            head = f"look: front camera {self.spec.image_size[0]}x{self.spec.image_size[1]}"

            def describe(index: int) -> str:
                ref = w.focus[index % len(w.focus)]
                return f"region {index}: {ref} visible, occlusion {r.uniform(0, 0.4):.2f}"

            return self._pad(f"{head}; visible: {seen}", target, describe), False
        if tool == "find_objects":
            rows = []
            size = 2
            for ref in w.refs():
                obj = w.objects[ref]
                row = {
                    "ref": ref,
                    "label": obj["label"],
                    "position": [round(v, 3) for v in obj["pos"]],
                    "relations": {"on": obj["on"]},
                    "confidence": round(r.uniform(0.8, 1.0), 2),
                }
                rows.append(row)
                size += len(json.dumps(row)) + 2
                if size > target:
                    break
            return json.dumps(rows), False
        if tool == "check_gripper":
            head = f"check_gripper: {w.gripper}, width {r.uniform(0, 0.08):.3f} m, temp 31.2 C"
            return self._pad(head, min(target, 600), self._telemetry), False
        raise ValueError(f"unknown small tool {tool!r}")

    def dump(self, tool: str) -> str:
        r = self.rng
        target = r.randint(*self.spec.dump_chars)
        if tool == "read_force_log":

            def row(index: int) -> str:
                return (
                    f"t={0.01 * index:.2f} fx={r.gauss(0, 1):.3f} fy={r.gauss(0, 1):.3f} "
                    f"fz={r.gauss(4, 1):.3f} tx={r.gauss(0, 0.1):.4f} ty={r.gauss(0, 0.1):.4f}"
                )

            return self._pad(f"force log: {target // 70} samples at 100 Hz", target, row)
        if tool == "dump_joint_states":

            def row(index: int) -> str:
                q = " ".join(f"{r.uniform(-2.8, 2.8):.4f}" for _ in range(7))
                return f"sample {index}: q=[{q}]"

            return self._pad(f"joint states: {target // 80} samples, 7 joints", target, row)
        if tool == "read_system_log":
            levels = ("INFO", "INFO", "INFO", "DEBUG", "WARN")
            parts = ("controller", "planner", "camera", "gripper", "safety")

            def row(index: int) -> str:
                return (
                    f"{1000 + index * 0.25:.2f} {r.choice(levels)} {r.choice(parts)}: "
                    f"cycle {index} ok, latency {r.uniform(0.5, 4):.2f} ms"
                )

            return self._pad(f"system log: last {target // 60} lines", target, row)
        raise ValueError(f"unknown dump tool {tool!r}")


def _choose_call(rng: random.Random, world: _World, dump: bool) -> tuple[str, dict[str, Any], str]:
    """Pick the next tool call and a short model text, in a plausible work rhythm."""
    if dump:
        tool = rng.choice(DUMP_TOOLS)
        arguments: dict[str, Any] = {
            "read_force_log": {"seconds": rng.choice([2, 5, 10, 30])},
            "dump_joint_states": {"samples": rng.choice([100, 250, 500])},
            "read_system_log": {"lines": rng.choice([200, 500, 800])},
        }[tool]
        text = {
            "read_force_log": "Checking the force log around the last grasp.",
            "dump_joint_states": "Dumping joint states to look for a following error.",
            "read_system_log": "Reading the controller log for warnings.",
        }[tool]
        return tool, arguments, text
    if world.holding:
        tray = rng.choice(world.trays)
        return "place", {"ref": world.holding, "target": tray}, f"Placing it in {tray}."
    roll = rng.random()
    if roll < 0.35:
        ref = rng.choice(world.refs())
        world.focus = [ref, *[o for o in world.focus if o != ref]][:6]
        return "pick", {"ref": ref}, f"Picking {ref} next."
    if roll < 0.55:
        x, y, z = (
            round(rng.uniform(0.3, 0.7), 3),
            round(rng.uniform(-0.3, 0.3), 3),
            round(rng.uniform(0.65, 0.9), 3),
        )
        return "move_to", {"x": x, "y": y, "z": z}, "Moving above the next part."
    if roll < 0.75:
        return "look", {}, "Looking again before the next grasp."
    if roll < 0.92:
        query = rng.choice(["cubes", "cups", "red", "blue", "on table_1"])
        return "find_objects", {"query": query}, f"Finding {query}."
    return "check_gripper", {}, "Checking the gripper."


def _fact_key(rng: random.Random, kind: FactKind, taken: set[str]) -> str:
    for _ in range(1000):
        if kind == "object_ref":
            key = f"{rng.choice(_FACT_PARTS)}_{rng.randint(100, 9999)}"
        elif kind == "coordinates":
            key = (
                f"({rng.uniform(-0.9, 0.9):.3f}, {rng.uniform(-0.9, 0.9):.3f}, "
                f"{rng.uniform(0.0, 1.2):.3f})"
            )
        else:
            letters = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
            key = f"E{rng.randint(1000, 9999)}-{letters}"
        if key not in taken:
            taken.add(key)
            return key
    raise RuntimeError("could not draw a unique fact key")


def _fact_line(rng: random.Random, kind: FactKind, key: str) -> str:
    if kind == "object_ref":
        return f"note: spare part {key} is stored in {rng.choice(_FACT_PLACES)}"
    if kind == "coordinates":
        return f"note: calibration marker observed at {key} (world frame)"
    return f"fault {key}: {rng.choice(_FAULTS)}; cleared after retry"


_GAP_BANDS = ((1, 20), (21, 120), (121, 450))
"""Probe distance in turns: short, medium and long (one third of the facts each)."""
_GAP_SCALE_TURNS = 600
"""Shorter traces scale the bands down proportionally, so every band still fits."""


_INSTRUCTIONS = (
    "Sort the parts on table_1 into the trays by colour, keep track of spare parts, "
    "calibration markers and faults you come across, and report them at the end.",
    "Check every tray for misplaced parts, fix what is wrong, and report the spare parts, "
    "markers and faults you have seen so far.",
    "Recalibrate the gripper against the markers you found earlier, then restack tray_2 "
    "and report any new faults.",
    "Inspect the charger dock area and the tool shelf, move stray parts back to their "
    "trays, and give a final inventory report.",
)
_REPORTS = (
    "Done: parts sorted into the trays by colour; faults seen are in the log.",
    "Done: trays checked and misplaced parts moved; findings are in the log.",
    "Done: gripper recalibrated and tray_2 restacked; new faults are in the log.",
    "Done: dock and shelf inspected, stray parts returned; inventory is in the log.",
)


def _task_lengths(spec: TraceSpec) -> list[int]:
    """Tool turns per task: as even as possible, every task at least one."""
    tasks = min(spec.tasks, spec.turns)
    base, extra = divmod(spec.turns, tasks)
    return [base + (1 if index < extra else 0) for index in range(tasks)]


def generate_trace(spec: TraceSpec | None = None) -> Trace:
    """Build the trace described by ``spec`` (deterministic for a given spec)."""
    spec = spec or TraceSpec()
    rng = random.Random(spec.seed)
    world = _World(rng)
    writer = _Writer(rng, world, spec)
    turns: list[dict[str, Any]] = []
    tasks: list[TraceTask] = []
    number = 0
    for index, length in enumerate(_task_lengths(spec)):
        first = number + 1
        for _ in range(length):
            number += 1
            turns.append(_tool_turn(rng, world, writer, spec, number))
        number += 1
        timestamp = 100.0 + 2.5 * number
        turns.append(
            {
                "turn": number,
                "timestamp": timestamp,
                "text": _REPORTS[index % len(_REPORTS)],
                "brief": world.brief(timestamp),
                "state": world.state(),
            }
        )
        instruction = _INSTRUCTIONS[index % len(_INSTRUCTIONS)]
        if index >= len(_INSTRUCTIONS):
            instruction += f" (round {index // len(_INSTRUCTIONS) + 1})"
        tasks.append(TraceTask(instruction=instruction, first_turn=first, last_turn=number))
    facts = _plant_facts(rng, spec, turns)
    profile = (
        "Embodiment: Franka Panda arm on a fixed base at a 1.2 x 0.8 m table (table_1).\n"
        "Frames: world (table corner), base at (0, 0, 0.62). Reach 0.85 m.\n"
        "Cameras: front (320x240, looking at the table from the robot's side).\n"
        "Limits: speed 0.25 m/s, payload 3 kg, gripper width 0-0.08 m.\n"
        "Keep-out: nothing below z=0.63 outside the table; the charger dock at x<0.1."
    )
    return Trace(
        spec=spec,
        instruction=tasks[0].instruction,
        profile_text=profile,
        turns=[TraceTurn.model_validate(turn) for turn in turns],
        facts=facts,
        tasks=tasks,
    )


def _tool_turn(
    rng: random.Random, world: _World, writer: _Writer, spec: TraceSpec, number: int
) -> dict[str, Any]:
    """One decision with its tool call and the tool's output."""
    timestamp = 100.0 + 2.5 * number
    brief, state = world.brief(timestamp), world.state()
    dump = rng.random() < spec.dump_share
    tool, arguments, text = _choose_call(rng, world, dump)
    if dump:
        output, is_error = writer.dump(tool), False
    else:
        output, is_error = writer.small(tool, arguments)
    return {
        "turn": number,
        "timestamp": timestamp,
        "text": text,
        "tool": tool,
        "arguments": arguments,
        "output": output,
        "is_error": is_error,
        "brief": brief,
        "state": state,
    }


def _plant_facts(
    rng: random.Random, spec: TraceSpec, turns: list[dict[str, Any]]
) -> list[PlantedFact]:
    """Insert ``spec.facts`` facts into tool outputs (mutating ``turns``)."""
    corpus = "\n".join(
        part for turn in turns for part in (turn.get("output", ""), turn["brief"], turn["text"])
    )
    taken: set[str] = set()
    last_probe = len(turns)
    kinds: tuple[FactKind, ...] = ("object_ref", "coordinates", "error_code")
    facts: list[PlantedFact] = []
    used_turns: set[int] = set()
    scale = min(1.0, spec.turns / _GAP_SCALE_TURNS)
    for index in range(min(spec.facts, spec.turns)):
        low, high = (max(1, round(b * scale)) for b in _GAP_BANDS[index % len(_GAP_BANDS)])
        high = min(high, last_probe - 1)
        low = min(low, high)
        for _ in range(200):
            gap = rng.randint(low, high)
            plant = rng.randint(1, last_probe - gap)
            if plant not in used_turns and turns[plant - 1].get("tool"):
                break
        else:
            continue
        used_turns.add(plant)
        kind = kinds[index % len(kinds)]
        key = _fact_key(rng, kind, taken)
        while key in corpus:
            key = _fact_key(rng, kind, taken)
        line = _fact_line(rng, kind, key)
        turn = turns[plant - 1]
        lines = turn["output"].split("\n")
        headline = rng.random() < spec.headline_share
        if headline:
            lines.insert(0, line)
        else:
            lines.insert(rng.randint(1, len(lines)), line)
        turn["output"] = "\n".join(lines)
        facts.append(
            PlantedFact(
                id=f"fact_{index + 1:03d}",
                kind=kind,
                key=key,
                plant_turn=plant,
                probe_turn=plant + gap,
                placement="headline" if headline else "body",
            )
        )
    return sorted(facts, key=lambda fact: (fact.probe_turn, fact.id))

"""A small deployment and suite on the built-in simulator for ``harness eval`` tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.fleet.episode import EpisodeRecord

ROOT = Path(__file__).resolve().parents[1]
CRASH_TOOL = "tools=[tests.fixtures.crash_once:wave]"


def write_deployment(folder: Path, **extra: Any) -> Path:
    """A config like configs/default.yaml with a memory folder to seed episodes from."""
    folder.mkdir(parents=True, exist_ok=True)
    memory = folder / "memory"
    memory.mkdir(exist_ok=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- The tray is light grey.\n", encoding="utf-8")
    data: dict[str, Any] = {
        "model": {"provider": "planner", "name": "tabletop-planner"},
        "embodiment": "panda_tabletop",
        "driver": {"name": "sim.tabletop", "seed": 0},
        "run": {"max_turns": 20, "store": ".harness", "store_sync": "normal"},
        "memory": {"path": "memory"},
        "evaluation": {"required_tools": ["pick", "place"]},
    }
    data.update(extra)
    path = folder / "deployment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def write_suite(folder: Path, *, crash_key: bool = False) -> Path:
    """Four short episodes over three families; with ``crash_key`` the pick_place/red/s0
    episode imports the crash-once tool (its first worker dies building it)."""
    red: dict[str, Any] = {"vars": {"color": "red"}}
    if crash_key:
        red["set"] = [CRASH_TOOL]
    data = {
        "suite": "small",
        "config": "deployment.yaml",
        "check": "programmatic",
        "tasks": [
            {
                "name": "pick_place",
                "instruction": "put the {color} cube in the tray",
                "variants": [red],
                "seeds": [0, 1],
                "max_turns": 12,
            },
            {
                "name": "refusal",
                "instruction": "put the yellow cube in the tray",
                "variants": [{"name": "absent"}],
                "seeds": [0],
                "success": "refused",
                "forbidden_tools": ["pick", "place"],
                "max_turns": 8,
            },
            {
                "name": "recovery",
                "instruction": "put the green cube in the tray",
                "variants": [
                    {"name": "green", "scene": {"faults": {"drop_on_lift": {"green_cube_1": 1}}}}
                ],
                "seeds": [2],
                "max_turns": 12,
            },
        ],
    }
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def fingerprint(records: list[EpisodeRecord]) -> dict[str, tuple[Any, ...]]:
    """What must not depend on the worker count or the backend."""
    return {
        r.key: (
            r.status,
            r.outcome,
            r.success,
            r.turns,
            r.tokens,
            r.safety_clamps,
            r.safety_blocks,
            tuple(sorted(r.tools_run.items())),
        )
        for r in records
    }

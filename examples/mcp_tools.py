"""Use a robot's MCP server as Harness tools, offline.

    python examples/mcp_tools.py

The Harness starts examples/mcp_gripper_server.py, offers its tools to the model (their
JSON Schemas unchanged), passes the physical one through a safety envelope, and ends the
server when it closes. A scripted model stands in for a real one; use
``model=build_model(...)`` or ``Harness.from_config`` with ``--model`` for a real provider.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from embodiment.types import SafetyDecision
from harness import Harness, HarnessConfig, Tool
from harness.providers import ScriptedModel, call, reply

SERVER = Path(__file__).with_name("mcp_gripper_server.py")


class GripperLimits:
    """A minimal safety envelope: clamp the gripper width to what the hardware allows."""

    def check(self, tool: Tool, arguments: Mapping[str, Any], observation: Any) -> SafetyDecision:
        width = float(arguments.get("width_m", 0.0))
        clamped = min(max(width, 0.0), 0.08)
        if clamped == width:
            return SafetyDecision(outcome="allow", arguments=dict(arguments))
        return SafetyDecision(
            outcome="clamp",
            arguments={**arguments, "width_m": clamped},
            violations=[f"width_m {width} -> {clamped}"],
            reason="gripper range is 0..0.08 m",
        )


def main() -> None:
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None},
            "memory": {"enabled": False},
            "mcp": {
                "servers": [
                    {
                        "name": "gripper",
                        "command": sys.executable,
                        "args": [str(SERVER)],
                        "physical": ["set_gripper"],
                        "call_timeout_s": 10,
                    }
                ]
            },
        }
    )
    model = ScriptedModel(
        [
            call("set_gripper", width_m=0.5),  # too wide: the envelope clamps it
            call("gripper_status"),
            reply("The gripper is fully open."),
        ]
    )
    with Harness.from_config(config, model=model, safety=GripperLimits()) as harness:
        offered = [t.name for t in harness.tools if t.source.startswith("mcp:")]
        print("MCP tools:", ", ".join(offered))
        for event in harness.run_stream("Open the gripper and confirm its width."):
            if event.type == "safety_check":
                print(f"safety  {event.tool}: {event.outcome} {event.violations}")
            elif event.type == "tool_result":
                print(f"result  {event.name}: {event.text}")
            elif event.type == "done":
                print(f"done    {event.status}: {event.report}")


if __name__ == "__main__":
    main()

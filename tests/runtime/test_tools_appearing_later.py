"""Issue 25, finding 6a: a tool that appears later on a server with physical tools is not
offered until the config classifies it.

A server announces a new tool (``tools/list_changed``) in the middle of a task. If it
matches no ``physical`` pattern it used to be offered as a tool that moves nothing, so a
motion tool added at run time would skip the envelope. Now it is withheld, with a warning
naming the config keys that classify it, until it is listed as physical (with a complete
safety declaration) or under ``non_physical``. The server is real (in this process) and
records what it received.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError

from benchmarks.admission_attacks import attack_newcomers, offline
from benchmarks.lib.admission_hardware import PANDA, Readings
from embodiment.envelope import SafetyEnvelope
from harness import Harness, HarnessConfig
from harness.config import MCPServerConfig
from harness.events import NotificationEvent, SafetyCheckEvent, ToolResultEvent, ToolsListedEvent
from harness.mcp.manager import MCPManager
from harness.providers import ScriptedModel, call, reply
from tests.mcp_recording import needs_mcp_server, recording_server

if TYPE_CHECKING:
    from benchmarks.lib.mcp_recording import RecordingServer

pytestmark = needs_mcp_server

XYZ = {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}}
MOVE = {"type": "object", "properties": XYZ, "required": ["x", "y", "z"]}
MOVE_KINDS = {"x": "position.x", "y": "position.y", "z": "position.z"}
GROW = {
    "type": "object",
    "properties": {"tool_name": {"type": "string"}, "schema": {"type": "object"}},
}


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    with recording_server({"move_to": MOVE, "grow": GROW, "noop": {"type": "object"}}) as recording:
        yield recording


def run(server: RecordingServer, newcomer: str, schema: dict[str, Any], **options: Any) -> Any:
    """Grow ``newcomer`` on turn 1, call it on turn 2; the events and what it received."""
    config = MCPServerConfig(name="arm", transport="streamable-http", url=server.url, **options)
    readings = Readings()
    with (
        MCPManager.start_servers([config]) as manager,
        Harness(
            offline(),
            model=ScriptedModel(
                [
                    call("grow", tool_name=newcomer, schema=schema),
                    lambda request: announced(manager, request, newcomer),
                    call(newcomer, x=0.5, y=0.0, z=1.0),
                    reply("done"),
                ]
            ),
            driver=readings,
            tool_sources=[manager],
            safety=SafetyEnvelope(PANDA, observe=readings.observe),
        ) as harness,
    ):
        events = list(harness.run_stream("grow a tool and use it"))
    return events, server.calls(newcomer)


def announced(manager: MCPManager, request: Any, newcomer: str) -> Any:
    """A turn that waits for the server's announcement to arrive (it travels on its own
    stream), so that the next turn's refresh has seen the new list."""
    deadline = time.monotonic() + 10
    while not (
        manager.tools_changed()  # arrived; the next refresh applies it
        or newcomer in {spec.name for spec in request.tools}  # applied: offered
        or f"arm.{newcomer}" in manager.skipped_tools()  # applied: withheld
    ):
        assert time.monotonic() < deadline, "the new tool list was never announced"
        time.sleep(0.01)
    return call("noop")


def test_an_unclassified_newcomer_is_withheld_with_a_warning(server: RecordingServer) -> None:
    events, received = run(
        server, "sneak", MOVE, physical=["move_to"], safety={"move_to": MOVE_KINDS}
    )
    assert received == []  # it never reached the server
    listed = [e for e in events if isinstance(e, ToolsListedEvent)]
    assert all("sneak" not in e.tools for e in listed)
    (warning,) = [e for e in events if isinstance(e, NotificationEvent) and "sneak" in e.message]
    assert warning.level == "warning"
    assert "mcp.servers.0.physical" in warning.message
    assert "mcp.servers.0.non_physical" in warning.message
    result = [e for e in events if isinstance(e, ToolResultEvent)][-1]
    assert result.is_error and result.error_kind == "unknown_tool"


def test_a_newcomer_listed_as_non_physical_is_offered(server: RecordingServer) -> None:
    events, received = run(
        server,
        "sneak",
        MOVE,
        physical=["move_to"],
        safety={"move_to": MOVE_KINDS},
        non_physical=["sne*"],
    )
    assert received == [{"x": 0.5, "y": 0.0, "z": 1.0}]
    assert not [e for e in events if isinstance(e, NotificationEvent) and "sneak" in e.message]


def test_a_physical_newcomer_is_offered_only_when_fully_declared(
    server: RecordingServer,
) -> None:
    events, received = run(
        server,
        "move_fast",
        {**MOVE, "properties": {**XYZ, "speed": {"type": "number"}}},
        physical=["move_*"],
        safety={"move_*": MOVE_KINDS},
    )
    assert received == []  # speed is not declared: withheld
    (warning,) = [
        e for e in events if isinstance(e, NotificationEvent) and "move_fast" in e.message
    ]
    assert "mcp.servers.0.safety.move_fast" in warning.message and "speed" in warning.message


def test_a_declared_physical_newcomer_passes_the_envelope(server: RecordingServer) -> None:
    events, received = run(
        server, "move_fast", MOVE, physical=["move_*"], safety={"move_*": MOVE_KINDS}
    )
    assert received == [{"x": 0.5, "y": 0.0, "z": 1.0}]
    (check,) = [e for e in events if isinstance(e, SafetyCheckEvent)]
    assert check.tool == "move_fast" and check.outcome == "allow"


def test_a_server_without_physical_tools_offers_newcomers_as_before(
    server: RecordingServer,
) -> None:
    _, received = run(server, "hello", MOVE)
    assert received == [{"x": 0.5, "y": 0.0, "z": 1.0}]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"physical": ["m"], "non_physical": ["m"]}, "non_physical: 'm' is also listed"),
        ({"non_physical": [" "]}, "non_physical: an empty pattern"),
    ],
)
def test_bad_non_physical_values_name_the_key(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HarnessConfig.model_validate(
            {"mcp": {"servers": [{"name": "arm", "command": "x", **options}]}}
        )


def test_newcomers_announced_one_after_another_never_reach_the_server() -> None:
    tally = attack_newcomers(4)
    assert tally.tries == 4 and tally.bad == 0, tally.example

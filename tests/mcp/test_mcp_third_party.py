"""Real parts nobody here wrote, and servers that come and go.

- ``mcp-server-time`` (PyPI, in the ``test`` extra) as a stdio server;
- ``@modelcontextprotocol/server-everything`` (npm) when it is installed (``.ci/run``
  installs it; ``MCP_SERVER_EVERYTHING`` names the binary, else it is looked up on PATH);
- an SDK-built streamable-HTTP server (tests/fixtures/mcp_robot_server.py) speaking the
  handshake-era protocol with a session id, killed and started again mid-session.

Every oracle is independent of the code under test: pids from /proc, what the fixture
server counts itself, bytes decoded by Pillow, the files on disk.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig
from harness.cli import main
from harness.config import MCPServerConfig
from harness.mcp import MCPManager, MCPTool, ServerState
from harness.mcp import server as server_module
from harness.providers import ScriptedModel, call, reply
from harness.runtime.phases.tool_thread import run_tool
from harness.tools import ToolContext
from tests.mcp.test_mcp_servers import FIXTURE, by_remote, invoke, offline, server, wait_dead

pytest.importorskip("mcp")
pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif(not os.path.isdir("/proc"), reason="pid checks need /proc"),
]

TIME_SERVER = shutil.which("mcp-server-time") or str(
    Path(sys.executable).with_name("mcp-server-time")
)
EVERYTHING = os.environ.get("MCP_SERVER_EVERYTHING") or shutil.which("mcp-server-everything")
needs_everything = pytest.mark.skipif(
    not (EVERYTHING and os.path.exists(EVERYTHING) and shutil.which("node")),
    reason="npm @modelcontextprotocol/server-everything is not installed (see .ci/run)",
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpServer:
    """The fixture server over streamable HTTP on a fixed port, which a test can kill and
    start again (a restart of the remote robot service)."""

    def __init__(self, *extra: str) -> None:
        self.port = _free_port()
        self.extra = extra
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.starts += 1
        self.process = subprocess.Popen(
            [sys.executable, FIXTURE, "--name", "remote", "--http", str(self.port), *self.extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert time.monotonic() < deadline and self.process.poll() is None, "no server"
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture()
def http_server() -> Iterator[HttpServer]:
    remote = HttpServer("--handshake-only")
    remote.start()
    try:
        yield remote
    finally:
        remote.kill()


def remote_config(remote: HttpServer, **options: Any) -> MCPServerConfig:
    return MCPServerConfig(name="remote", transport="streamable-http", url=remote.url, **options)


# ============================================================================ mcp-server-time


def test_the_real_time_server_lists_calls_and_validates_its_output_schema(tmp_path: Path) -> None:
    config = MCPServerConfig(name="time", command=TIME_SERVER, args=["--local-timezone", "UTC"])
    with MCPManager.start_servers([config], log_dir=tmp_path) as manager:
        tools = {tool.name: tool for tool in manager.tools()}
        assert set(tools) == {"get_current_time", "convert_time"}
        listed = {spec["name"]: spec for spec in manager._servers["time"].listing}
        assert tools["get_current_time"].parameters == listed["get_current_time"]["inputSchema"]
        assert "outputSchema" in listed["get_current_time"]
        now = invoke(tools["get_current_time"], timezone="Europe/Warsaw")  # type: ignore[arg-type]
        assert not now.is_error, now.text
        assert now.data["timezone"] == "Europe/Warsaw"
        converted = invoke(
            tools["convert_time"],  # type: ignore[arg-type]
            source_timezone="UTC",
            time="12:00",
            target_timezone="Asia/Tokyo",
        )
        assert not converted.is_error, converted.text
        assert converted.data["target"]["datetime"].split("T")[1].startswith("21:00")
        wrong = invoke(tools["get_current_time"], timezone="Mars/Olympus_Mons")  # type: ignore[arg-type]
        assert wrong.is_error and wrong.executed
        pids = manager.owned_pids()
    assert wait_dead(pids) == []


def test_the_real_time_server_drives_a_harness_task(tmp_path: Path) -> None:
    config = HarnessConfig.model_validate(
        offline(MCPServerConfig(name="time", command=TIME_SERVER, args=["--local-timezone", "UTC"]))
    )
    model = ScriptedModel(
        [call("get_current_time", timezone="UTC"), reply("it is some time in UTC")]
    )
    with Harness.from_config(config, model=model) as h:
        events = list(h.run_stream("what time is it?"))
    done = events[-1]
    assert done.status == "completed"
    result = next(e for e in events if e.type == "tool_result")
    assert not result.is_error and '"timezone": "UTC"' in result.text


# ============================================================================ HTTP restarts


def test_a_restarted_http_server_gets_a_new_session_and_the_call_is_sent_again(
    http_server: HttpServer, tmp_path: Path
) -> None:
    """Item 1: the server forgets the session when it restarts (it answers "Session not
    found"); the client connects again and sends a non-physical call once more. A
    physical call is not sent twice: it is reported as not executed."""
    config = remote_config(
        http_server,
        physical=["move_to"],
        safety={"move_to": {"x": "position.x", "y": "position.y", "z": "position.z"}},
    )
    with MCPManager.start_servers([config], log_dir=tmp_path) as manager:
        assert manager.status()[0].protocol_version < "2026"  # a handshake-era session
        assert manager.call("remote", "add", {"a": 1, "b": 2}).text == "3"
        http_server.kill()
        http_server.start()
        output = manager.call("remote", "add", {"a": 20, "b": 22})
        assert (output.text, output.is_error) == ("42", False)
        assert manager.status()[0].restarts == 1

        move = by_remote(manager, "remote", "move_to")
        http_server.kill()
        http_server.start()
        refused = invoke(move, x=0.1, y=0.0, z=0.2)
        assert refused.is_error and not refused.executed
        assert refused.error_kind == "server_unavailable"
        assert "no longer knew the session" in refused.text
        # The server's own count proves the refused call never ran there.
        moved = invoke(move, x=0.1, y=0.0, z=0.2)
        assert moved.data["moves"] == 1
    log = (tmp_path / "remote.log").read_text()
    assert "--- remote start 3" in log


def test_a_remote_server_that_is_down_for_a_while_is_reconnected_with_backoff(
    http_server: HttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 5: failed reconnects do not use up max_restarts; calls meanwhile are not sent
    (executed=False) and say when the next attempt is; the server is back once it is."""
    monkeypatch.setattr(server_module, "RECONNECT_FIRST_DELAY_S", 0.2)
    config = remote_config(http_server, max_restarts=1)
    with MCPManager.start_servers([config], log_dir=tmp_path) as manager:
        assert manager.call("remote", "add", {"a": 1, "b": 1}).text == "2"
        http_server.kill()
        # The call that finds the server already gone never reached it: not executed.
        gone = manager.call("remote", "add", {"a": 1, "b": 1})
        assert gone.error_kind == "server_unavailable" and not gone.executed, gone.text
        outcomes = []
        for _ in range(6):  # far more failed attempts than max_restarts=1
            outcomes.append(manager.call("remote", "add", {"a": 1, "b": 1}))
            time.sleep(0.25)
        assert all(o.error_kind == "server_unavailable" and not o.executed for o in outcomes)
        assert any("next attempt to reconnect is in" in o.text for o in outcomes)
        assert manager.status()[0].state is ServerState.DOWN  # not given up
        http_server.start()
        deadline = time.monotonic() + 10
        while (output := manager.call("remote", "add", {"a": 2, "b": 2})).is_error:
            assert time.monotonic() < deadline, output.text
            time.sleep(0.1)
        assert output.text == "4" and manager.status()[0].state is ServerState.READY


@pytest.mark.parametrize("physical", [False, True], ids=["plain", "physical"])
def test_a_call_to_a_remote_server_already_down_is_not_executed(
    http_server: HttpServer, tmp_path: Path, physical: bool
) -> None:
    """Issue 26 item 8: the server died between two calls; the next call never reaches it
    (connection refused), so it did not run, physical or not (never "outcome unknown")."""
    config = remote_config(http_server, physical=["add"] if physical else [])
    with MCPManager.start_servers([config], log_dir=tmp_path) as manager:
        add = by_remote(manager, "remote", "add")
        assert invoke(add, a=1, b=1).text == "2"  # type: ignore[arg-type]
        http_server.kill()
        output = invoke(add, a=1, b=1)  # type: ignore[arg-type]
    assert output.executed is False, output.text
    assert output.error_kind == "server_unavailable", output.text
    assert "not executed" in output.text and "could not be reached" in output.text


def test_an_http_server_killed_during_a_call_is_a_crash_not_a_timeout(
    http_server: HttpServer, tmp_path: Path
) -> None:
    """Item 6: the dropped connection ends the wait at once (server_crashed), long before
    the call's timeout; the SDK's own warnings go to the server's log, not stderr."""
    config = remote_config(http_server, call_timeout_s=20)
    with MCPManager.start_servers([config], log_dir=tmp_path) as manager:
        killer = threading_timer(0.5, http_server.kill)
        started = time.monotonic()
        output = manager.call("remote", "slow", {"seconds": 30})
        elapsed = time.monotonic() - started
        killer.join()
    assert output.error_kind == "server_crashed", output.text
    assert elapsed < 15, elapsed


def threading_timer(delay_s: float, action: Any) -> Any:
    import threading

    timer = threading.Timer(delay_s, action)
    timer.start()
    return timer


def test_sdk_warnings_about_a_server_go_to_its_log_not_stderr(
    http_server: HttpServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    config = remote_config(http_server)
    manager = MCPManager.start_servers([config], log_dir=tmp_path)
    assert manager.call("remote", "add", {"a": 1, "b": 1}).text == "2"
    http_server.kill()  # closing now: the SDK cannot end the session and says so
    manager.close()
    captured = capfd.readouterr()
    log = (tmp_path / "remote.log").read_text()
    assert "Session termination failed" in log
    assert "Session termination failed" not in captured.err + captured.out


# ============================================================================ stdio: hangs


def test_the_call_after_a_hang_is_sent_after_the_restart_not_timed_out(tmp_path: Path) -> None:
    """Item 4: the liveness probe and the restart do not eat the next call's deadline; the
    call is sent on the new process and its result comes back (and a physical call that
    never got sent is not "outcome unknown")."""
    config = server("stuck", physical=["move_to", "wedge"], call_timeout_s=1.5)
    with MCPManager.start_servers([config], log_dir=tmp_path) as manager:
        first_pid = manager.pids()["stuck"]
        wedged = invoke(by_remote(manager, "stuck", "wedge"), seconds=60)
        assert wedged.error_kind == "outcome_unknown"
        move = by_remote(manager, "stuck", "move_to")
        interrupts: list[int] = []
        runner = run_tool(
            move,
            move.validate({"x": 0.1, "y": 0.0, "z": 0.2}),
            {"call_id": "c2", "task_id": "t", "turn": 2},
            timeout_s=move.timeout_s or 30.0,
            should_cancel=lambda: False,
            interrupt=lambda: interrupts.append(1),
        )
        while True:
            try:
                next(runner)
            except StopIteration as stop:
                outcome = stop.value
                break
        assert not outcome.timed_out and interrupts == [], outcome.output.text
        assert outcome.output.data["moves"] == 1  # counted by the new server process
        assert outcome.duration_s > 1.5  # probe (1.5 s) + restart: longer than call_timeout_s
        assert manager.pids()["stuck"] != first_pid
        assert wait_dead([first_pid]) == []


def test_a_server_that_cannot_come_back_makes_calls_not_executed_in_the_loop(
    tmp_path: Path,
) -> None:
    """Item 6: server_unavailable results are recorded with executed=False."""
    config = HarnessConfig.model_validate(offline(server("flaky", max_restarts=0)))
    model = ScriptedModel([call("crash"), call("add", a=1, b=2), reply("gave up")])
    with Harness.from_config(config, model=model) as h:
        events = list(h.run_stream("crash, then add"))
    results = [e for e in events if e.type == "tool_result"]
    assert [r.error_kind for r in results] == ["server_crashed", "server_unavailable"]
    assert [r.executed for r in results] == [True, False]


# ============================================================================ harness check


def checked_config(tmp_path: Path, *servers: MCPServerConfig) -> Path:
    """A config file for `harness check` with these servers and a scripted model."""
    path = tmp_path / "mcp.yaml"
    scripted = {
        "provider": "scripted",
        "name": "scripted",
        "options": {"responses": [{"text": "hi"}]},
    }
    path.write_text(json.dumps(offline(*servers, model=scripted)))
    return path


def test_check_reports_each_server_when_one_of_several_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An optional server that fails is one failed line; everything else is checked (the
    Harness starts without it). A required one stops the check before anything else."""
    broken = MCPServerConfig(name="broken", command="no-such-mcp-server-binary")
    path = checked_config(tmp_path, server("arm"), broken, server("cam"))
    assert main(["check", "--config", str(path)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "ok mcp server arm" in out and "ok mcp server cam" in out
    assert "fail mcp server broken" in out and "no-such-mcp-server-binary" in out
    assert "ok model" in out and "1 failed" in out

    required = broken.model_copy(update={"required": True})
    path = checked_config(tmp_path, server("arm"), required, server("cam"))
    assert main(["check", "--config", str(path)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "ok mcp server arm started (13 tools); closed again" in out
    assert "ok mcp server cam started" in out
    assert "fail mcp server broken" in out and "no-such-mcp-server-binary" in out
    assert "1 of 3 mcp servers failed to start" in out


def test_check_warns_about_annotations_and_missing_safety_maps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = checked_config(tmp_path, server("arm", "--rich", physical=["move_to", "read_joints"]))
    assert main(["check", "--config", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warn mcp tool move_to physical but no `safety` map" in out
    assert "warn mcp tool wipe_calibration its server marks it destructive" in out
    assert "warn mcp tool read_joints listed in `physical` but its server marks it read-only" in out


# ============================================================================ what servers offer


def test_instructions_audience_resources_and_logs_in_a_task(tmp_path: Path) -> None:
    """Item 7 end to end: server instructions in Resident (bounded), a block for the user
    goes to the operator as a notification and not to the model, a resource link is read
    with read_resource (offered from the turn after the first link), log notifications
    land in the server's log, and a destructive tool says so in its description."""
    long_instructions = "Home the arm before every pick. " * 100  # 3,200 characters
    config = HarnessConfig.model_validate(
        offline(
            server("arm", "--rich", "--instructions", long_instructions),
            run={"store": str(tmp_path / "store")},
        )
    )
    model = ScriptedModel(
        [
            call("report_status"),
            call("find_log"),
            call("read_resource", uri="robot://logs/today", offset=0, limit=200),
            call("chatty"),
            reply("done"),
        ]
    )
    with Harness.from_config(config, model=model) as h:
        assert "(its server marks it destructive)" in h.tools.get("wipe_calibration").description
        events = list(h.run_stream("look around"))
    assert events[-1].status == "completed"
    system = "\n".join(block.text for block in model.requests[0].system)
    assert "## arm\nHome the arm before every pick." in system
    assert f"[... cut: {len(long_instructions.strip())} characters in all]" in system
    assert system.count("Home the arm") < 70  # bounded: not all 100 repetitions
    notes = [e.message for e in events if e.type == "notification"]
    assert notes == ["arm.report_status: operator: the left gripper pad is worn"]
    results = {e.name: e for e in events if e.type == "tool_result"}
    assert "gripper pad" not in results["report_status"].text
    assert "arm status: ready" in results["report_status"].text
    tools_per_request = [[spec.name for spec in r.tools] for r in model.requests]
    assert "read_resource" not in tools_per_request[1] and "read_resource" in tools_per_request[2]
    read = results["read_resource"].text
    assert read.startswith(
        "[robot://logs/today characters 0-200 of 12799; continue with offset=200]"
    )
    assert "0000 joint temperatures nominal" in read
    log = (tmp_path / "store" / "mcp" / "arm.log").read_text()
    assert "[info] server: arm: calibrating joint 3" in log
    assert "[warning] server: arm: joint 3 is warm" in log


# ============================================================================ server-everything


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MCPManager]:
    if not (EVERYTHING and shutil.which("node")):
        pytest.skip("npm @modelcontextprotocol/server-everything is not installed")
    logs = tmp_path_factory.mktemp("everything-logs")
    config = MCPServerConfig(name="every", command=str(EVERYTHING), args=["stdio"])
    manager = MCPManager.start_servers([config], log_dir=logs)
    pids = manager.owned_pids()
    yield manager
    manager.close()
    assert wait_dead(pids) == []


@needs_everything
def test_everything_server_image_reaches_the_model(everything: MCPManager) -> None:
    """Item 2: its PNG has a bad CRC in an ancillary chunk; the image still arrives, and no
    Python repr reaches a model-facing text."""
    from PIL import Image

    output = everything.call("every", "get-tiny-image", {})
    assert not output.is_error
    (image,) = output.images
    assert (image.width, image.height) == (20, 20)
    with Image.open(io.BytesIO(image.data)) as decoded:
        decoded.load()
        assert decoded.size == (20, 20)
    assert " at 0x" not in output.text and "could not be used" not in output.text


@needs_everything
def test_everything_server_task_only_tool_is_skipped_and_reported(
    everything: MCPManager,
) -> None:
    """Item 3."""
    names = {tool.name for tool in everything.tools()}
    assert "simulate-research-query" not in names and "get-sum" in names
    assert "taskSupport" in everything.skipped_tools()["every.simulate-research-query"]


@needs_everything
def test_everything_server_annotations_links_and_structured_output(
    everything: MCPManager,
) -> None:
    tools = {tool.name: tool for tool in everything.tools()}
    assert isinstance(tools["echo"], MCPTool)
    assert tools["echo"].annotations["readOnlyHint"] is True
    structured = invoke(tools["get-structured-content"], location="New York")  # type: ignore[arg-type]
    assert not structured.is_error and "temperature" in structured.data
    links = everything.call("every", "get-resource-links", {"count": 2})
    assert "(read it with read_resource)" in links.text
    uri = links.text.split("[resource link ", 1)[1].split(": ", 1)[1].split("]", 1)[0]
    read = everything.read_resource(uri, 0, 100)
    assert not read.is_error and read.text.startswith(f"[{uri} characters 0-")
    assert "read_resource" in {tool.name for tool in everything.tools()}


@needs_everything
def test_everything_server_user_audience_block_goes_to_the_operator(
    everything: MCPManager,
) -> None:
    item = by_remote(everything, "every", "get-annotated-message")
    emitted: list[Any] = []
    ctx = ToolContext(on_event=emitted.append)
    output = item.invoke(item.validate({"messageType": "debug", "includeImage": True}), ctx)
    spec = next(t for t in everything._servers["every"].listing if t["name"] == item.remote_name)
    assert spec  # listed
    for_user = [e.message for e in emitted if e.type == "notification"]
    assert for_user, output.text  # the image is annotated for the user only
    assert all(message.startswith("every.get-annotated-message: ") for message in for_user)
    assert output.images == []  # and so it is not shown to the model

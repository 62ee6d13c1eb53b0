"""MCP servers as real stdio subprocesses (tests/fixtures/mcp_robot_server.py).

Servers start in about 0.6 s, so servers that no test breaks are shared by the module.
Every "no orphans" check is by pid through /proc, independent of the code under test.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.cli import main
from harness.config import MCPServerConfig
from harness.errors import ConfigError
from harness.mcp import MCPManager, MCPServerError, MCPTool, ServerState
from harness.messages import Verdict
from harness.providers import ScriptedModel, call, reply
from harness.runtime.phases.tool_thread import CallOutcome, run_tool
from harness.tools import ToolArgumentError, ToolCancelledError, ToolContext
from tests.conftest import BoxSafety, fake_robot

pytest.importorskip("mcp")
pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif(not os.path.isdir("/proc"), reason="pid checks need /proc"),
]

FIXTURE = str(Path(__file__).parents[1] / "fixtures" / "mcp_robot_server.py")


def server(name: str, *extra_args: str, **options: Any) -> MCPServerConfig:
    return MCPServerConfig(
        name=name, command=sys.executable, args=[FIXTURE, "--name", name, *extra_args], **options
    )


def offline(*servers: MCPServerConfig, **sections: Any) -> dict[str, Any]:
    """Config data with no robot, no run store and no memory: only MCP servers."""
    return {
        "embodiment": None,
        "driver": None,
        "run": {"store": None},
        "memory": {"enabled": False},
        "mcp": {"servers": [config.model_dump() for config in servers]},
        **sections,
    }


def running(pid: int) -> bool:
    """Alive and not a zombie, read straight from /proc (a process reaped between the open
    and the read makes the read fail with ESRCH: gone, too)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_dead(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    """Pids still running after the hang guard (reaping may lag a kill by a moment)."""
    deadline = time.monotonic() + timeout_s
    alive = [pid for pid in pids if running(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [pid for pid in alive if running(pid)]
    return alive


def mcp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "harness-mcp"]


def by_remote(manager: MCPManager, server_name: str, remote: str) -> MCPTool:
    for item in manager.tools():
        assert isinstance(item, MCPTool)
        if item.server.name == server_name and item.remote_name == remote:
            return item
    raise AssertionError(f"{server_name}.{remote} is not offered")


def invoke(item: MCPTool, progress: list[str] | None = None, **arguments: Any) -> Any:
    ctx = ToolContext(on_progress=progress.append if progress is not None else None)
    return item.invoke(item.validate(arguments), ctx)


# ============================================================================ shared servers


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MCPManager]:
    workdir = tmp_path_factory.mktemp("mcp-workdir")
    manager = MCPManager.start_servers(
        [
            server(
                "arm",
                physical=["move_*"],
                env={"HARNESS_TEST_ENV": "set-in-config"},
                env_passthrough=["ROBOT_SITE"],
            ),
            server(
                "cam",
                "--extra",
                "focus",
                allow=["snapshot", "focus", "add", "describe"],
                deny=["describe"],
            ),
        ],
        base_dir=workdir,
        environ={"ROBOT_SITE": "lab-7", "ROBOT_SECRET": "hunter2", "PATH": os.environ["PATH"]},
    )
    pids = manager.owned_pids()
    yield manager
    manager.close()
    assert wait_dead(pids) == []


def test_lists_tools_namespacing_only_collisions(shared: MCPManager) -> None:
    names = {(t.server.name, t.remote_name): t.name for t in shared.tools()}  # type: ignore[attr-defined]
    assert names[("arm", "add")] == "arm.add" and names[("cam", "add")] == "cam.add"
    assert names[("arm", "snapshot")] == "arm.snapshot"
    assert names[("arm", "plan_grasp")] == "plan_grasp"
    assert names[("cam", "focus")] == "focus"
    assert ("cam", "describe") not in names  # denied even though allowed
    assert ("cam", "move_to") not in names  # not in the allow list
    physical = {t.name for t in shared.tools() if t.physical}
    assert physical == {"move_to"}
    statuses = {s.name: s for s in shared.status()}
    assert statuses["arm"].state is ServerState.READY and statuses["arm"].pid in shared.owned_pids()


def test_schemas_pass_through_unchanged(shared: MCPManager) -> None:
    item = by_remote(shared, "arm", "plan_grasp")
    listed = next(t for t in item.server.listing if t["name"] == "plan_grasp")
    assert item.parameters == listed["inputSchema"]
    assert item.spec().parameters == listed["inputSchema"]
    defs = item.parameters["$defs"]
    assert defs["GraspTarget"]["properties"]["object_id"]["pattern"] == r"^[a-z]+_[0-9]+$"
    assert item.parameters["properties"]["target"] == {"$ref": "#/$defs/GraspTarget"}
    # The harness validates against the server's schema ($ref, pattern, bounds) locally.
    with pytest.raises(ToolArgumentError, match="does not match"):
        item.validate({"target": {"object_id": "Cube-1", "approach": {"x": 0, "y": 0, "z": 0.1}}})
    with pytest.raises(ToolArgumentError, match=r"0\.08"):
        item.validate(
            {
                "target": {
                    "object_id": "cube_1",
                    "approach": {"x": 0, "y": 0, "z": 0.1},
                    "width_m": 0.5,
                }
            }
        )
    output = invoke(item, target={"object_id": "cube_1", "approach": {"x": 0, "y": 0, "z": 0.1}})
    assert output.data == {"object_id": "cube_1", "z": 0.1, "width_m": 0.04}


def test_calls_return_text_and_structured_content(shared: MCPManager) -> None:
    output = invoke(by_remote(shared, "arm", "add"), a=2, b=40)
    assert (output.text, output.data, output.is_error) == ("42", {"result": 42}, False)
    output = invoke(by_remote(shared, "cam", "focus"))
    assert output.text == "focus from cam"


def test_image_results_become_transient_images(shared: MCPManager) -> None:
    output = invoke(by_remote(shared, "cam", "snapshot"), width=80, height=60)
    assert output.text == "wrist camera 80x60"
    (image,) = output.images
    assert (image.media_type, image.width, image.height) == ("image/png", 80, 60)
    big = invoke(by_remote(shared, "cam", "snapshot"), width=1280, height=960)
    assert (big.images[0].media_type, big.images[0].width) == ("image/jpeg", 640)


def test_is_error_result_and_server_stays_healthy(shared: MCPManager) -> None:
    output = invoke(by_remote(shared, "arm", "fail"), reason="jam")
    assert output.is_error and output.error_kind == "tool_error"
    assert "gripper says: jam" in output.text
    assert invoke(by_remote(shared, "arm", "add"), a=1, b=1).text == "2"
    assert {s.name: s.state for s in shared.status()}["arm"] is ServerState.READY


def test_progress_notifications_reach_the_operator(shared: MCPManager) -> None:
    progress: list[str] = []
    output = invoke(by_remote(shared, "arm", "count"), progress, steps=3)
    assert output.text == "counted 3"
    assert progress == [f"arm.count: step {n} ({n}/3)" for n in (1, 2, 3)]


def test_environment_and_working_directory(shared: MCPManager, tmp_path: Path) -> None:
    data = invoke(by_remote(shared, "arm", "whereami")).data
    assert Path(data["cwd"]).name.startswith("mcp-workdir")
    assert data["env"] == {"ROBOT_SITE": "lab-7", "HARNESS_TEST_ENV": "set-in-config"}


def test_control_scripts_cannot_bypass_the_safety_envelope(shared: MCPManager) -> None:
    with pytest.raises(PermissionError, match="safety envelope"):
        shared.call("arm", "move_to", {"x": 0, "y": 0, "z": 0})
    assert shared.call("arm", "add", {"a": 1, "b": 2}).text == "3"
    with pytest.raises(KeyError, match="configured: arm, cam"):
        shared.call("gripper", "add", {})


# ============================================================================ isolation


def test_crash_mid_call_is_isolated_restarted_and_bounded() -> None:
    threads_before = len(mcp_threads())
    manager = MCPManager.start_servers(
        [server("flaky", physical=["crash"], max_restarts=1), server("steady")]
    )
    seen = set(manager.owned_pids())
    try:
        crash = by_remote(manager, "flaky", "crash")
        first_pid = manager.pids()["flaky"]
        output = invoke(crash)
        assert output.is_error and output.error_kind == "outcome_unknown"  # physical
        assert "motor driver fault" in output.text and "restarted on the next call" in output.text
        assert wait_dead([first_pid]) == []
        assert manager.call("steady", "add", {"a": 1, "b": 1}).text == "2"  # unaffected
        assert {s.name: s.state for s in manager.status()}["flaky"] is ServerState.DOWN

        # The next call restarts it (the crashed call itself is never sent again).
        assert manager.call("flaky", "add", {"a": 2, "b": 3}).text == "5"
        second_pid = manager.pids()["flaky"]
        assert second_pid not in (None, first_pid)
        seen.update(manager.owned_pids())

        # Crashing again right after a restart, without a successful call in between,
        # uses up max_restarts=1: the server is given up and says so.
        invoke(crash)
        output = invoke(crash)  # restart 1 of 1, then it crashes again
        assert output.error_kind == "outcome_unknown"
        seen.update(p for p in [manager.pids()["flaky"]] if p)
        output = manager.call("flaky", "add", {"a": 1, "b": 1})
        assert output.error_kind == "server_unavailable"
        assert "given up after 1 restarts in a row" in output.text
        assert manager.call("steady", "describe").text.startswith("server steady")
        manager.restart("flaky")  # an operator can bring it back explicitly
        assert manager.call("flaky", "add", {"a": 1, "b": 1}).text == "2"
        seen.update(manager.owned_pids())
    finally:
        manager.close()
    assert wait_dead(sorted(seen)) == []
    assert manager.owned_pids() == []
    assert len(mcp_threads()) == threads_before  # the loop thread was joined


def run_in_harness_runner(item: MCPTool, **arguments: Any) -> tuple[CallOutcome, int]:
    """Run a tool the way the loop does: its timeout, and the interrupt path if physical."""
    interrupts: list[int] = []
    runner = run_tool(
        item,
        item.validate(arguments),
        {"call_id": "call_1", "task_id": "task_1", "turn": 1},
        timeout_s=item.timeout_s or 30.0,
        should_cancel=lambda: False,
        interrupt=(lambda: interrupts.append(1)) if item.physical else None,
    )
    while True:
        try:
            next(runner)
        except StopIteration as stop:
            return stop.value, len(interrupts)


def test_hung_server_times_out_alone_and_is_restarted() -> None:
    manager = MCPManager.start_servers(
        [server("stuck", physical=["wedge"], call_timeout_s=0.5), server("steady")]
    )
    seen = set(manager.owned_pids())
    try:
        # Outside a task the server's own deadline applies.
        slow = manager.call("stuck", "slow", {"seconds": 30})
        assert slow.error_kind == "timeout" and "timed out after 0.5 s" in slow.text
        # A slow call is not a reason to restart: the probe finds the server answering.
        pid = manager.pids()["stuck"]
        assert manager.call("stuck", "add", {"a": 1, "b": 1}).text == "2"
        assert manager.pids()["stuck"] == pid

        # Inside a task the Harness's deadline applies: the physical call goes through the
        # interrupt path and is reported as outcome unknown.
        outcome, interrupts = run_in_harness_runner(
            by_remote(manager, "stuck", "wedge"), seconds=60
        )
        assert outcome.timed_out and not outcome.cancelled and interrupts == 1
        assert outcome.output.error_kind == "outcome_unknown"
        assert "outcome unknown" in outcome.output.text
        assert manager.call("steady", "add", {"a": 2, "b": 2}).text == "4"  # unaffected
        # The wedged server does not answer the liveness probe: it is restarted.
        assert manager.call("stuck", "add", {"a": 3, "b": 3}).text == "6"
        assert manager.pids()["stuck"] != pid
        assert wait_dead([pid]) == []
        seen.update(manager.owned_pids())
    finally:
        manager.close()
    assert wait_dead(sorted(seen)) == []


def test_cancellation_stops_waiting_and_the_call_reports_cancelled(shared: MCPManager) -> None:
    item = by_remote(shared, "arm", "slow")
    cancel = threading.Event()
    ctx = ToolContext(cancel_event=cancel)
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    with pytest.raises(ToolCancelledError):
        item.invoke({"seconds": 30}, ctx)
    timer.join()
    # The server was only slow: the next call probes it and goes ahead.
    assert invoke(by_remote(shared, "arm", "add"), a=5, b=5).text == "10"


# ============================================================================ the Harness


class RecordingEvaluator:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def evaluate(self, *, tool: Any, arguments: Any, output: Any, **_: Any) -> Verdict:
        self.calls.append((tool.name, dict(arguments)))
        return Verdict(status="success", evidence=f"applied {output.data['applied']}")


@tool
def describe() -> str:
    """A harness-side tool whose name an MCP server also uses."""
    return "harness describe"


def test_harness_runs_mcp_tools_end_to_end(tmp_path: Path) -> None:
    """A ScriptedModel drives a physical MCP tool through the safety envelope and the
    evaluator, sees a returned image on the next call only, grows the server's tool list
    mid-task, and uses the new tool on the next turn."""
    config = HarnessConfig.model_validate(
        offline(
            # `wave` appears mid-task on a server with a physical tool: it is offered only
            # because it is classified as moving nothing.
            server("arm", physical=["move_to"], non_physical=["wave"]),
            evaluation={"required_tools": ["move_to"]},
        )
    )
    model = ScriptedModel(
        [
            call("move_to", x=2.0, y=0.1, z=0.05),
            call("snapshot", width=32, height=24),
            call("grow", tool_name="wave"),
            call("wave"),
            reply("moved, looked, grew and waved"),
        ]
    )
    evaluator = RecordingEvaluator()
    h = Harness.from_config(
        config,
        model=model,
        safety=BoxSafety(),
        evaluator=evaluator,
        observation_provider=fake_robot(),
        tools=[describe],
    )
    pid = h.tool_sources[0].pids()["arm"]  # type: ignore[attr-defined]
    try:
        assert h.tools.get("arm.describe").source == "mcp:arm"  # collision with ours
        assert h.tools.get("describe").source == "user"
        events = list(h.run_stream("move, then wave"))
    finally:
        h.close()
    done = events[-1]
    assert done.type == "done" and done.status == "completed", done
    safety = next(e for e in events if e.type == "safety_check")
    assert safety.outcome == "clamp" and safety.applied["x"] == 0.5
    results = {e.name: e for e in events if e.type == "tool_result"}
    applied = json.loads(results["move_to"].text.split("\nevaluation:")[0])["applied"]
    assert applied["x"] == 0.5  # the server received the clamped value
    assert evaluator.calls == [("move_to", {"x": 0.5, "y": 0.1, "z": 0.05})]
    assert results["move_to"].evaluation.status == "success"
    assert results["wave"].text == "wave says hi"
    images_per_request = [
        [image.label for image in (r.refreshed.images if r.refreshed else [])]
        for r in model.requests
    ]
    assert "arm.snapshot#1" in images_per_request[2]  # the call right after the snapshot
    assert "arm.snapshot#1" not in images_per_request[3]  # and only that one
    assert results["snapshot"].images  # stored by hash in the run store
    tools_per_request = [[spec.name for spec in r.tools] for r in model.requests]
    assert "wave" not in tools_per_request[2] and "wave" in tools_per_request[3]
    listed = [e.turn for e in events if e.type == "tools_listed"]
    assert listed == [0, 4]
    assert wait_dead([pid]) == []


WRITE_PID_AND_SLEEP = (
    "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"
)
"""A 'server' that never answers the handshake."""


def test_failing_construction_leaves_no_process(tmp_path: Path) -> None:
    good_pid_file = tmp_path / "good.pid"
    stuck_pid_file = tmp_path / "stuck.pid"
    stuck = MCPServerConfig(
        name="stuck",
        command=sys.executable,
        args=["-c", WRITE_PID_AND_SLEEP, str(stuck_pid_file)],
        startup_timeout_s=1.0,
        required=True,
    )
    missing = MCPServerConfig(name="missing", command="no-such-mcp-server-binary", required=True)
    threads_before = len(mcp_threads())
    config = HarnessConfig.model_validate(
        offline(server("good", "--pid-file", str(good_pid_file)), stuck, missing)
    )
    with pytest.raises(MCPServerError) as failure:
        Harness.from_config(config, model=ScriptedModel([reply("never")]))
    message = str(failure.value)
    assert "'stuck'" in message and "startup_timeout_s=1" in message
    assert "'missing'" in message and "no-such-mcp-server-binary" in message
    pids = [int(good_pid_file.read_text()), int(stuck_pid_file.read_text())]
    assert wait_dead(pids) == []
    assert len(mcp_threads()) == threads_before


CRASHER = str(Path(__file__).parents[1] / "fixtures" / "mcp_crash_at_initialize.py")


def test_a_server_that_fails_to_start_is_reported_and_the_rest_works(tmp_path: Path) -> None:
    """Issue 26 item 11: one broken server (it dies at initialize) does not stop the
    Harness: its tools are absent, ``harness check`` fails it with the reason, the model
    is told in Resident, the task gets a warning event, and the other server works."""
    from harness.assembly.checks import check_mcp

    broken = MCPServerConfig(name="sqlite", command=sys.executable, args=[CRASHER])
    missing = MCPServerConfig(name="gone", command="no-such-mcp-server-binary")
    config = HarnessConfig.model_validate(offline(server("arm"), broken, missing))
    model = ScriptedModel([call("add", a=2, b=3), reply("5")])
    with Harness.from_config(config, model=model) as harness:
        sources = {t.source for t in harness.tools if t.source.startswith("mcp:")}
        assert sources == {"mcp:arm"}
        checks = {r.subject: r for r in check_mcp(harness)}  # type: ignore[arg-type]
        events = list(harness.run_stream("add 2 and 3"))
    assert checks["mcp server arm"].status == "ok"
    for name, why in (("sqlite", "incompatible SDK"), ("gone", "no-such-mcp-server-binary")):
        result = checks[f"mcp server {name}"]
        assert result.status == "fail" and why in result.detail, result
    warnings = [e for e in events if e.type == "notification" and e.level == "warning"]
    assert {w.message.split("'")[1] for w in warnings} == {"sqlite", "gone"}
    system = " ".join(b.text for b in model.requests[0].system)
    assert "MCP servers not available" in system and "'sqlite'" in system
    results = [e for e in events if e.type == "tool_result"]
    assert [(r.name, r.text) for r in results] == [("add", "5")]
    assert events[-1].type == "done" and events[-1].status == "completed"  # type: ignore[attr-defined]


def test_a_required_server_that_fails_to_start_stops_the_harness(tmp_path: Path) -> None:
    pid_file = tmp_path / "arm.pid"
    broken = MCPServerConfig(name="sqlite", command=sys.executable, args=[CRASHER], required=True)
    config = HarnessConfig.model_validate(
        offline(server("arm", "--pid-file", str(pid_file)), broken)
    )
    with pytest.raises(MCPServerError, match="'sqlite'"):
        Harness.from_config(config, model=ScriptedModel([reply("never")]))
    assert wait_dead([int(pid_file.read_text())]) == []


def test_harness_failing_after_servers_started_closes_them(tmp_path: Path) -> None:
    pid_file = tmp_path / "arm.pid"
    config = HarnessConfig.model_validate(
        offline(
            server("arm", "--pid-file", str(pid_file)),
            context={"compaction": {"reserve_tokens": 500_000}},  # > the window: refused
        )
    )
    with pytest.raises(ConfigError, match="reserve_tokens"):
        Harness.from_config(config, model=ScriptedModel([reply("never")]))
    assert wait_dead([int(pid_file.read_text())]) == []


def test_misspelled_physical_tool_is_a_config_error(tmp_path: Path) -> None:
    pid_file = tmp_path / "arm.pid"
    with pytest.raises(ConfigError) as failure:
        MCPManager.start_servers(
            [server("arm", "--pid-file", str(pid_file), physical=["move_too"])]
        )
    assert failure.value.key == "mcp.servers.0.physical"
    assert "move_to" in str(failure.value)  # lists what the server offers
    assert wait_dead([int(pid_file.read_text())]) == []


def test_interpreter_exit_without_close_ends_the_servers(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from harness.config import MCPServerConfig
        from harness.mcp import MCPManager
        manager = MCPManager.start_servers([
            MCPServerConfig(name="arm", command=sys.executable, call_timeout_s=0.5,
                            args=[{FIXTURE!r}, "--name", "arm"]),
        ])
        manager.call("arm", "wedge", {{"seconds": 60}})  # leave it hung, too
        print(" ".join(map(str, manager.owned_pids())), flush=True)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=Path(__file__).parents[2],
    )
    assert result.returncode == 0, result.stderr[-2000:]
    pids = [int(pid) for pid in result.stdout.split()]
    assert pids
    assert wait_dead(pids) == []


# ============================================================================ transports, CLI


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_streamable_http_server_with_headers() -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, FIXTURE, "--name", "remote", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "no server"
                time.sleep(0.05)
        config = MCPServerConfig(
            name="remote",
            transport="streamable-http",
            url=f"http://127.0.0.1:{port}/mcp",
            headers={"X-Robot-Cell": "cell-7"},
        )
        with MCPManager.start_servers([config]) as manager:
            assert manager.call("remote", "add", {"a": 20, "b": 22}).text == "42"
            assert manager.call("remote", "header", {"name": "x-robot-cell"}).text == "cell-7"
            assert manager.pids() == {"remote": None}  # not our process
    finally:
        process.terminate()
        process.wait(10)


def test_check_reports_mcp_servers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mcp.yaml"
    path.write_text(
        json.dumps(
            offline(
                server("arm", physical=["move_to"]),
                model={
                    "provider": "scripted",
                    "name": "scripted",
                    "options": {"responses": [{"text": "hi"}]},
                },
            )
        )
    )
    assert main(["check", "--config", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "ok mcp server arm (pid" in out and "13 tools offered, 1 physical" in out


def test_mcp_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy

    example = Path(__file__).parents[2] / "examples" / "mcp_tools.py"
    runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert "MCP tools: set_gripper, gripper_status" in out
    assert "safety  set_gripper: clamp" in out and "done    completed" in out


def test_physical_mcp_tools_declare_what_their_arguments_are(
    shared: MCPManager, tmp_path: Path
) -> None:
    """With the real envelope, an undeclared physical MCP tool is blocked (fail closed); a
    declared one is checked against the profile and clamped into the workspace. The
    undeclared one is the shared arm's ``move_to`` (physical by ``move_*``, no ``safety``
    map): only the declared server is started here."""
    from embodiment.envelope import SafetyEnvelope
    from embodiment.profile import load_profile
    from embodiment.types import Observation

    declared = {"x": "position.x", "y": "position.y", "z": "position.z"}
    manager = MCPManager.start_servers(
        [server("arm", physical=["move_to"], safety={"move_*": declared})], base_dir=tmp_path
    )
    try:
        tools = {
            "arm.move_to": by_remote(manager, "arm", "move_to"),
            "bare.move_to": by_remote(shared, "arm", "move_to"),
        }
        assert tools["bare.move_to"].physical
        assert tools["arm.move_to"].safety == declared
        assert tools["bare.move_to"].safety == {}
        envelope = SafetyEnvelope(load_profile("panda_tabletop"))
        readings = Observation(state={"ee_position": [0.4, 0.0, 0.9], "joint_positions": [0.0] * 7})
        too_far = {"x": 0.79, "y": 0.0, "z": 0.9}  # 1 cm beyond the workspace edge
        clamped = envelope.check(tools["arm.move_to"], too_far, readings)
        assert clamped.outcome == "clamp" and clamped.arguments["x"] == pytest.approx(0.78)
        blocked = envelope.check(tools["bare.move_to"], too_far, readings)
        assert blocked.outcome == "block"
        assert "declares no safety kinds" in " ".join(blocked.violations)
    finally:
        manager.close()


def test_safety_declarations_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown safety kind"):
        server("arm", physical=["move_to"], safety={"move_to": {"x": "altitude"}})
    with pytest.raises(ValueError, match="not listed in `physical`"):
        server("arm", physical=["move_to"], safety={"describe": {"x": "position.x"}})

"""MCP pieces that need no subprocess: result conversion, names, allow/deny/physical,
process lookup by token, the loop thread, and the Harness's between-turns tool hook."""

from __future__ import annotations

import base64
import io
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from harness import Harness, HarnessConfig, Tool, tool
from harness.config import MCPServerConfig, ObservationConfig
from harness.image_metadata import strip_metadata
from harness.mcp.convert import to_tool_output
from harness.mcp.loop_thread import LoopThread
from harness.mcp.naming import ToolNames, offered, sanitize, unmatched_physical
from harness.mcp.processes import (
    TOKEN_ENV,
    carries,
    find_processes,
    is_alive,
    leader_pid,
    terminate,
    terminate_token,
)
from harness.providers import ScriptedModel, call, reply

NAME_RULE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def _image(fmt: str, size: tuple[int, int]) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", size, (10, 200, 30)).save(buffer, format=fmt)
    return base64.b64encode(buffer.getvalue()).decode()


# ============================================================================ conversion


def test_text_and_structured_content() -> None:
    output = to_tool_output(
        {
            "content": [{"type": "text", "text": "3"}],
            "structuredContent": {"result": 3},
            "isError": False,
        },
        label="arm.add",
    )
    assert (output.text, output.data, output.images) == ("3", {"result": 3}, [])
    assert not output.is_error


def test_structured_content_alone_is_rendered_as_json() -> None:
    output = to_tool_output({"content": [], "structuredContent": {"ok": True}}, label="x.y")
    assert output.render() == '{"ok": true}'


def test_is_error_becomes_an_error_result_the_model_reads() -> None:
    output = to_tool_output(
        {"content": [{"type": "text", "text": "gripper jammed"}], "isError": True}, label="a.b"
    )
    assert output.is_error and output.error_kind == "tool_error"
    assert output.render() == "gripper jammed"
    empty = to_tool_output({"content": [], "isError": True}, label="a.b")
    assert empty.is_error and empty.text == "the tool reported an error"


def test_small_png_passes_through_byte_for_byte() -> None:
    data = _image("PNG", (64, 48))
    output = to_tool_output(
        {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}, label="cam.snap"
    )
    (image,) = output.images
    assert (image.media_type, image.width, image.height) == ("image/png", 64, 48)
    assert image.data == base64.b64decode(data)
    assert image.label == "cam.snap"
    assert output.text == "image cam.snap 64x48"


def test_large_or_unusual_images_are_encoded_like_camera_frames() -> None:
    limits = ObservationConfig(max_image_side=320)
    big = to_tool_output(
        {
            "content": [
                {"type": "text", "text": "two frames"},
                {"type": "image", "data": _image("PNG", (1280, 720)), "mimeType": "image/png"},
                {"type": "image", "data": _image("BMP", (40, 30)), "mimeType": "image/bmp"},
            ]
        },
        label="cam.snap",
        images=limits,
    )
    first, second = big.images
    assert (first.media_type, first.width, first.height) == ("image/jpeg", 320, 180)
    assert (second.media_type, second.width, second.height) == ("image/jpeg", 40, 30)
    assert first.label == "cam.snap#1" and second.label == "cam.snap#2"
    assert big.text == "two frames"


def test_broken_image_becomes_a_readable_note() -> None:
    output = to_tool_output(
        {"content": [{"type": "image", "data": "not base64!!", "mimeType": "image/png"}]},
        label="cam.snap",
    )
    assert output.images == [] and not output.is_error
    assert "could not be used" in output.text and "base64" in output.text
    garbage = base64.b64encode(b"definitely not a picture").decode()
    output = to_tool_output(
        {"content": [{"type": "image", "data": garbage, "mimeType": "image/png"}]}, label="c.s"
    )
    assert "not a readable image" in output.text


def test_resources_links_and_audio_are_described() -> None:
    output = to_tool_output(
        {
            "content": [
                {"type": "resource", "resource": {"uri": "file:///map.yaml", "text": "rooms: 3"}},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///a.bin", "blob": "AAAA", "mimeType": "x/bin"},
                },
                {"type": "resource_link", "uri": "file:///log.txt", "name": "log"},
                {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"},
            ]
        },
        label="s.t",
    )
    assert "[resource file:///map.yaml]\nrooms: 3" in output.text
    assert "[resource file:///a.bin (x/bin, about 3 bytes) omitted]" in output.text
    assert "[resource link log: file:///log.txt]" in output.text
    assert "audio/wav" in output.text and "not passed to the model" in output.text


def test_in_process_server_result_converts() -> None:
    """A real SDK result object (in-process client, ~ms) converts like its wire form."""
    anyio = pytest.importorskip("anyio")
    mcp = pytest.importorskip("mcp")
    if not hasattr(mcp, "Client"):
        pytest.skip("in-process Client is SDK 2.x")
    from tests.fixtures.mcp_robot_server import build_server

    async def snapshot() -> Any:
        async with mcp.Client(build_server("cam")) as client:
            return await client.call_tool("snapshot", {"width": 32, "height": 24})

    output = to_tool_output(anyio.run(snapshot), label="cam.snapshot")
    assert output.text == "wrist camera 32x24"
    (image,) = output.images
    assert (image.media_type, image.width, image.height) == ("image/png", 32, 24)


# ============================================================================ names


def test_unique_names_stay_bare_and_collisions_are_namespaced() -> None:
    names = ToolNames().assign(
        [("arm", "move_to"), ("arm", "add"), ("cam", "add"), ("cam", "snapshot")],
        reserved=["snapshot", "update_task_notes"],
    )
    assert names == {
        ("arm", "move_to"): "move_to",
        ("arm", "add"): "arm.add",
        ("cam", "add"): "cam.add",
        ("cam", "snapshot"): "cam.snapshot",
    }


def test_names_are_sticky_when_another_server_adds_the_same_name() -> None:
    naming = ToolNames()
    assert naming.assign([("arm", "wave")])[("arm", "wave")] == "wave"
    later = naming.assign([("arm", "wave"), ("cam", "wave")])
    assert later == {("arm", "wave"): "wave", ("cam", "wave"): "cam.wave"}


def test_invalid_and_long_names_are_made_valid_and_unique() -> None:
    assert sanitize("navigate/to pose") == "navigate_to_pose"
    long = "x" * 80
    names = ToolNames().assign([("perception-server", long), ("perception-server", long + "y")])
    assert all(NAME_RULE.match(name) for name in names.values())
    assert len(set(names.values())) == 2


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["arm", "cam", "a-very-long-server-name-for-perception-xyz"]),
            st.text(min_size=1, max_size=90),
        ),
        unique=True,
        max_size=12,
    ),
    st.lists(st.from_regex(NAME_RULE, fullmatch=True), max_size=5),
)
def test_assigned_names_are_always_valid_and_unique(
    tools: list[tuple[str, str]], reserved: list[str]
) -> None:
    names = ToolNames().assign(tools, reserved=reserved)
    assert set(names) == set(tools)
    assert all(NAME_RULE.match(name) for name in names.values())
    assert len(set(names.values())) == len(tools)
    assert not set(names.values()) & set(reserved)


def test_allow_deny_and_physical_patterns() -> None:
    config = MCPServerConfig(
        name="arm",
        command="x",
        allow=["move_*", "snapshot"],
        deny=["move_fast"],
        physical=["move_*", "grip"],
    )
    assert offered(config, "move_to") and offered(config, "snapshot")
    assert not offered(config, "move_fast")  # deny wins
    assert not offered(config, "reboot")
    assert unmatched_physical(config, ["move_to", "snapshot"]) == ["grip"]
    everything = MCPServerConfig(name="cam", command="x")
    assert offered(everything, "anything")


# ============================================================================ processes


def _spawn_marked(token: str, *, fork: bool = True) -> subprocess.Popen[bytes]:
    code = "import os, time; os.fork() == 0 or None; time.sleep(60)"
    if not fork:
        code = "import time; time.sleep(60)"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, TOKEN_ENV: token},
        start_new_session=True,
    )


def _spawn_plain() -> subprocess.Popen[bytes]:
    """A process no manager started: nothing may ever signal it."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def _wait_found(token: str, count: int) -> list[int]:
    for _ in range(500):
        found = find_processes([token])
        if len(found) >= count:
            return found
        threading.Event().wait(0.01)
    raise AssertionError(f"{token}: {len(find_processes([token]))} processes, not {count}")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process lookup by token needs /proc")
def test_only_processes_carrying_the_token_are_ended_whatever_pids_are_given() -> None:
    """The oracle is each process's own exit status, not the module's lookups: handed every
    pid there is (its own, another start's, a process nobody started), ``terminate`` ends
    the token's processes and no other."""
    ours = _spawn_marked("owned-token")
    theirs = _spawn_marked("other-token")
    plain = _spawn_plain()
    try:
        owned = _wait_found("owned-token", 2)
        other = _wait_found("other-token", 2)
        ended = terminate([*owned, *other, plain.pid], token="owned-token", grace_s=2.0)
        assert sorted(ended) == sorted(owned)
        assert ours.wait(5) is not None
        assert theirs.poll() is None and plain.poll() is None  # both still run
        assert all(is_alive(pid) for pid in other)
        assert carries(theirs.pid, "other-token") and not carries(theirs.pid, "owned-token")
        assert not carries(plain.pid, "owned-token")
        assert terminate_token("owned-token") == []  # nothing left with it
    finally:
        for process in (ours, theirs, plain):
            process.kill()
            process.wait(5)
        terminate_token("other-token", grace_s=2.0)


_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def _reuse_pid(pid: int) -> subprocess.Popen[bytes] | None:
    """A plain process given ``pid``'s number (the kernel hands out ``ns_last_pid + 1``
    next); None when another process took the number first."""
    with open(_LAST_PID, "w") as handle:
        handle.write(str(pid - 1))
    process = _spawn_plain()
    if process.pid == pid:
        return process
    process.kill()
    process.wait(5)
    return None


@pytest.mark.skipif(not os.access(_LAST_PID, os.W_OK), reason="needs a writable ns_last_pid")
def test_a_servers_pid_handed_to_another_process_is_never_signalled() -> None:
    """The attack: a server ended and was reaped, and the kernel gave its number to an
    unrelated process (forced here through ``ns_last_pid``). The health check's ``kill``
    path and every sweep hold the old pid; none of them may reach the new process, and it
    must not count as the server being alive."""
    victim = None
    for _ in range(50):  # another worker's fork can take the number first
        # No child: a number stays taken while a process of its session is left over.
        server = _spawn_marked("reaped-token", fork=False)
        leader = server.pid
        _wait_found("reaped-token", 1)
        terminate_token("reaped-token", grace_s=2.0)
        server.wait(5)
        victim = _reuse_pid(leader)
        if victim is not None:
            break
    assert victim is not None, "no pid reuse in 50 tries"
    try:
        assert is_alive(leader)  # the number alone says "alive": the old check's mistake
        assert not carries(leader, "reaped-token")
        assert terminate([leader], token="reaped-token", grace_s=0.5) == []
        assert terminate_token("reaped-token", grace_s=0.5) == []
        assert victim.poll() is None  # still running, never signalled
    finally:
        victim.kill()
        victim.wait(5)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process lookup by token needs /proc")
def test_processes_are_found_by_token_and_ended_with_their_children() -> None:
    process = _spawn_marked("unit-test-token")
    try:
        for _ in range(200):
            found = find_processes(["unit-test-token"])
            if len(found) == 2:  # the server and the child it forked
                break
            threading.Event().wait(0.01)
        assert process.pid in found and len(found) == 2
        assert leader_pid("unit-test-token") == process.pid
        assert find_processes(["another-token"]) == []
        ended = terminate(found, token="unit-test-token", grace_s=2.0)
        assert sorted(ended) == sorted(found)
        process.wait(5)
        assert not is_alive(process.pid)
        for _ in range(200):
            if not find_processes(["unit-test-token"]):
                break
            threading.Event().wait(0.01)
        assert find_processes(["unit-test-token"]) == []
    finally:
        process.kill()
        process.wait(5)


def test_loop_thread_is_joined_on_close() -> None:
    loop = LoopThread("harness-mcp-unit")

    async def double(value: int) -> int:
        return value * 2

    assert loop.call(double, 21, timeout_s=5) == 42
    assert any(t.name == "harness-mcp-unit" for t in threading.enumerate())
    assert loop.close(timeout_s=5)
    assert not any(t.name == "harness-mcp-unit" for t in threading.enumerate())


# ============================================================================ the hook


class ChangingSource:
    """A tool source whose set of tools a tool call can change (like list_changed)."""

    def __init__(self) -> None:
        self.names = ["scan"]
        self.changed = False
        self.reserved_seen: list[set[str]] = []

    def _make(self, name: str) -> Tool:
        def handler() -> str:
            if name == "scan":
                self.names.append("wave")
                self.changed = True
            return f"{name} done"

        return Tool(name, f"The {name} tool.", handler, parameters={"type": "object"})

    def tools(self, *, reserved: Iterable[str] = ()) -> list[Tool]:
        self.reserved_seen.append(set(reserved))
        self.changed = False
        return [self._make(name) for name in self.names]

    def tools_changed(self) -> bool:
        return self.changed


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def test_tool_source_changes_apply_between_turns_only(config: HarnessConfig) -> None:
    source = ChangingSource()
    model = ScriptedModel([call("scan"), call("wave"), reply("done")])
    h = Harness(config, model=model, tools=[ping], tool_sources=[source])
    assert "scan" in h.tools and "wave" not in h.tools
    assert "ping" in source.reserved_seen[0] and "scan" not in source.reserved_seen[0]
    events = list(h.run_stream("scan, then wave"))
    assert events[-1].status == "completed"
    first, second, third = ([spec.name for spec in r.tools] for r in model.requests)
    assert "wave" not in first and "wave" in second and "wave" in third
    kinds = [(e.type, getattr(e, "turn", None)) for e in events]
    listed = [turn for kind, turn in kinds if kind == "tools_listed"]
    assert listed == [0, 2]
    # The new list is announced after turn 1's tool result and before turn 2's model call.
    result_1 = kinds.index(("tool_result", 1))
    listed_2 = kinds.index(("tools_listed", 2))
    response_2 = kinds.index(("model_response", 2))
    assert result_1 < listed_2 < response_2
    wave_result = [e for e in events if e.type == "tool_result" and e.name == "wave"]
    assert wave_result[0].text == "wave done"
    h.close()


# ============================================================================ the manager


class ListedServer:
    """Stands in for a connected server: only its listing matters here."""

    serves_resources = False

    def __init__(self, name: str, listing: list[dict[str, Any]], **options: Any) -> None:
        self.name = name
        self.config = MCPServerConfig(name=name, command="unused", **options)
        self.listing = listing

    def changed(self) -> bool:
        return False


def test_tools_with_unusable_schemas_are_skipped_and_reported() -> None:
    from harness.mcp import MCPManager

    manager = MCPManager([])
    good = {"type": "object", "properties": {"ref": {"type": "string", "pattern": "^[a-z]+$"}}}
    manager._servers["arm"] = ListedServer(  # type: ignore[assignment]
        "arm",
        [
            {"name": "pick", "description": "Pick.", "inputSchema": good},
            {"name": "broken", "inputSchema": {"type": "object", "properties": {"a": {"type": 7}}}},
            {"name": "bare"},
        ],
        physical=["pick"],
    )
    tools = {t.name: t for t in manager.tools()}
    assert set(tools) == {"pick", "bare"}
    assert tools["pick"].parameters == good and tools["pick"].physical
    assert tools["bare"].parameters == {"type": "object", "properties": {}}
    assert tools["bare"].description == "bare (tool of MCP server arm)"
    assert "invalid input schema" in manager.skipped_tools()["arm.broken"]


def test_handshake_era_list_changed_notification_is_recognised() -> None:
    """Servers on protocol versions before 2026-07-28 announce changes with a
    notification (the 2.x SDK passes it bare, 1.x wrapped in a ServerNotification)."""
    anyio = pytest.importorskip("anyio")
    types = pytest.importorskip("mcp").types
    from harness.mcp.client_session import notification_handler

    seen: list[str] = []
    handle = notification_handler(lambda: seen.append("changed"))
    changed = types.ToolListChangedNotification(method="notifications/tools/list_changed")
    other = types.ResourceListChangedNotification(method="notifications/resources/list_changed")
    messages: list[Any] = [changed, other]
    wrapper = getattr(types, "ServerNotification", None)
    if "root" in getattr(wrapper, "model_fields", {}):  # SDK 1.x
        messages += [wrapper(changed), wrapper(other)]
    for message in messages:
        anyio.run(handle, message)
    assert seen == ["changed"] * (len(messages) // 2)


# ============================================================================ real parts


def _png_chunk(kind: bytes, body: bytes, *, crc_ok: bool = True) -> bytes:
    import struct
    import zlib

    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    if not crc_ok:
        crc ^= 0xA5A5A5A5
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def _png_with_ancillary(pixels: Image.Image, ancillary: list[tuple[bytes, bytes, bool]]) -> bytes:
    """A PNG (written by Pillow) with extra ancillary chunks spliced in after IHDR; the
    oracle for the repair is Pillow's decoding of the untouched original."""
    buffer = io.BytesIO()
    pixels.save(buffer, format="PNG")
    original = buffer.getvalue()
    head = 8 + 25  # signature + IHDR chunk
    extra = b"".join(_png_chunk(kind, body, crc_ok=ok) for kind, body, ok in ancillary)
    return original[:head] + extra + original[head:]


@given(
    st.lists(
        st.tuples(
            st.sampled_from([b"tEXt", b"iCCP", b"zTXt", b"eXIf", b"pHYs"]),
            st.binary(max_size=64),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(1, 40),
    st.integers(1, 40),
)
def test_damaged_optional_png_chunks_never_keep_the_image_from_the_model(
    ancillary: list[tuple[bytes, bytes, bool]], width: int, height: int
) -> None:
    """Item 2, over random ancillary chunks with good and bad CRCs: the image always
    arrives with the original pixels, and nothing model-facing carries a Python repr."""
    original = Image.new("RGB", (width, height), (width * 6, height * 6, 77))
    data = _png_with_ancillary(original, ancillary)
    output = to_tool_output(
        {
            "content": [
                {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/png"}
            ]
        },
        label="cam.snap",
    )
    assert " at 0x" not in output.text
    (image,) = output.images
    with Image.open(io.BytesIO(image.data)) as decoded:
        assert decoded.convert("RGB").tobytes() == original.tobytes()
    try:
        with Image.open(io.BytesIO(data)) as strict:
            strict.load()
        accepted = True
    except Exception:
        accepted = False
    if accepted:  # nothing to repair: byte for byte, less its metadata (issue 26 item 2)
        assert image.data == strip_metadata(data)


def test_a_damaged_critical_png_chunk_is_refused_without_a_repr() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (1, 2, 3)).save(buffer, format="PNG")
    data = bytearray(buffer.getvalue())
    data[8 + 25 + 8 + 2] ^= 0xFF  # a byte inside IDAT: its CRC no longer matches
    output = to_tool_output(
        {
            "content": [
                {
                    "type": "image",
                    "data": base64.b64encode(bytes(data)).decode(),
                    "mimeType": "image/png",
                }
            ]
        },
        label="cam.snap",
    )
    assert output.images == []
    assert "could not be used" in output.text and " at 0x" not in output.text
    assert "<" not in output.text


def test_structured_content_is_checked_against_the_output_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"celsius": {"type": "number"}},
        "required": ["celsius"],
    }
    good = to_tool_output(
        {"content": [{"type": "text", "text": "21.5"}], "structuredContent": {"celsius": 21.5}},
        label="env.temp",
        output_schema=schema,
    )
    assert not good.is_error and good.data == {"celsius": 21.5}
    bad = to_tool_output(
        {"content": [{"type": "text", "text": "warm"}], "structuredContent": {"celsius": "warm"}},
        label="env.temp",
        output_schema=schema,
    )
    assert bad.is_error and bad.error_kind == "invalid_output" and bad.executed
    assert "env.temp ran, but its structured result does not match" in bad.text
    assert "celsius" in bad.text and bad.text.endswith("\nwarm")  # the text stays readable
    missing = to_tool_output(
        {"content": [{"type": "text", "text": "21.5"}]}, label="env.temp", output_schema=schema
    )
    assert missing.error_kind == "invalid_output" and "is missing" in missing.text
    errored = to_tool_output(
        {"content": [{"type": "text", "text": "sensor offline"}], "isError": True},
        label="env.temp",
        output_schema=schema,
    )
    assert errored.error_kind == "tool_error"  # an error result carries no structured data


def test_the_sdks_output_schema_refusal_is_reported_as_invalid_output() -> None:
    """The SDK validates structuredContent itself and raises; that is the tool's result
    being wrong, not the server refusing the call."""
    from harness.mcp.replies import ServerReplies

    connection = ServerReplies.__new__(ServerReplies)  # the connection's failure texts
    connection.name = "env"
    refusal = RuntimeError(
        "Invalid structured content returned by tool temp: 'warm' is not of type 'number'"
    )
    output = connection.rejected_output("temp", refusal)
    assert output.error_kind == "invalid_output" and output.executed
    assert output.text == (
        "temp ran, but mcp server 'env' returned a structured result that does not match "
        "the tool's declared outputSchema: 'warm' is not of type 'number'"
    )
    missing = RuntimeError("Tool temp has an output schema but did not return structured content")
    assert connection.rejected_output("temp", missing).error_kind == "invalid_output"
    other = connection.rejected_output("temp", ValueError("bad arguments"))
    assert other.error_kind == "tool_error" and "rejected temp" in other.text


def test_blocks_for_the_user_only_go_to_the_operator() -> None:
    seen: list[str] = []
    result = {
        "content": [
            {"type": "text", "text": "ready"},
            {"type": "text", "text": "pad worn", "annotations": {"audience": ["user"]}},
            {"type": "text", "text": "both", "annotations": {"audience": ["user", "assistant"]}},
            {"type": "text", "text": "model only", "annotations": {"audience": ["assistant"]}},
        ]
    }
    output = to_tool_output(result, label="arm.status", to_operator=seen.append)
    assert output.text == "ready\nboth\nmodel only"
    assert seen == ["arm.status: pad worn"]
    kept = to_tool_output(result, label="arm.status")  # a control script: it is the operator
    assert "[for the operator] pad worn" in kept.text


def test_task_only_tools_are_skipped_and_reported() -> None:
    from harness.mcp import MCPManager

    manager = MCPManager([])
    manager._servers["lab"] = ListedServer(  # type: ignore[assignment]
        "lab",
        [
            {"name": "research", "execution": {"taskSupport": "required"}},
            {"name": "maybe", "execution": {"taskSupport": "optional"}},
            {"name": "plain"},
        ],
    )
    assert {t.name for t in manager.tools()} == {"maybe", "plain"}
    assert "taskSupport: required" in manager.skipped_tools()["lab.research"]

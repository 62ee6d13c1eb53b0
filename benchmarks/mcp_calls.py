"""What the harness adds to an MCP tool call, side by side with the bare SDK.

    python benchmarks/mcp_calls.py [--calls 200]

Rows: the SDK's own async client in one event loop (the floor); MCPManager.call from a
synchronous caller (the background loop thread); and the full tool path the turn loop
uses (argument validation, a worker thread watched for timeout and cancellation, result
conversion). Also start and close of one stdio server. Uses the test fixture server.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.config import MCPServerConfig  # noqa: E402
from harness.mcp import MCPManager, MCPTool  # noqa: E402
from harness.runtime.phases.tool_thread import run_tool  # noqa: E402

FIXTURE = str(ROOT / "tests" / "fixtures" / "mcp_robot_server.py")
ARGS = [FIXTURE, "--name", "bench"]


def _ms(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return statistics.mean(samples) * 1e3, statistics.median(samples) * 1e3, p95 * 1e3


def bench_sdk(calls: int) -> tuple[list[float], float, float]:
    from mcp import StdioServerParameters, stdio_client

    samples: list[float] = []
    timings: dict[str, float] = {}

    async def main() -> None:
        import mcp

        params = StdioServerParameters(command=sys.executable, args=ARGS)
        started = time.perf_counter()
        async with contextlib.AsyncExitStack() as stack:
            if hasattr(mcp, "Client"):  # SDK 2.x
                client = await stack.enter_async_context(mcp.Client(params))
            else:
                read, write = await stack.enter_async_context(stdio_client(params))
                client = await stack.enter_async_context(mcp.ClientSession(read, write))
                await client.initialize()
            timings["start"] = time.perf_counter() - started
            for _ in range(calls):
                t = time.perf_counter()
                await client.call_tool("add", {"a": 1, "b": 2})
                samples.append(time.perf_counter() - t)
            closing = time.perf_counter()
        timings["close"] = time.perf_counter() - closing

    anyio.run(main)
    return samples, timings["start"], timings["close"]


def bench_harness(calls: int) -> tuple[list[float], list[float], float, float]:
    started = time.perf_counter()
    manager = MCPManager.start_servers(
        [MCPServerConfig(name="bench", command=sys.executable, args=ARGS)]
    )
    start = time.perf_counter() - started
    direct: list[float] = []
    for _ in range(calls):
        t = time.perf_counter()
        manager.call("bench", "add", {"a": 1, "b": 2})
        direct.append(time.perf_counter() - t)
    add = next(t for t in manager.tools() if isinstance(t, MCPTool) and t.remote_name == "add")
    full: list[float] = []
    for _ in range(calls):
        t = time.perf_counter()
        runner = run_tool(
            add,
            add.validate({"a": 1, "b": 2}),
            {"call_id": "c", "task_id": "t", "turn": 1},
            timeout_s=add.timeout_s or 30.0,
            should_cancel=lambda: False,
            interrupt=None,
        )
        for _event in runner:
            pass
        full.append(time.perf_counter() - t)
    closing = time.perf_counter()
    manager.close()
    return direct, full, start, time.perf_counter() - closing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    sdk, sdk_start, sdk_close = bench_sdk(args.calls)
    direct, full, start, close = bench_harness(args.calls)
    floor = statistics.median(sdk)
    print(f"MCP tool call `add` over stdio, {args.calls} calls each (ms)")
    print(f"{'path':<48}{'mean':>8}{'median':>8}{'p95':>8}{'x SDK':>8}")
    for label, samples in (
        ("SDK async client (one event loop)", sdk),
        ("MCPManager.call (sync, loop thread)", direct),
        ("harness tool path (validate, worker, convert)", full),
    ):
        mean, median, p95 = _ms(samples)
        ratio = statistics.median(samples) / floor
        print(f"{label:<48}{mean:8.2f}{median:8.2f}{p95:8.2f}{ratio:8.2f}")
    print()
    print(f"{'server lifecycle (s)':<48}{'SDK':>8}{'harness':>8}")
    print(f"{'start (spawn, handshake, list tools)':<48}{sdk_start:8.2f}{start:8.2f}")
    print(f"{'close (stdin closed, exit, pid check)':<48}{sdk_close:8.2f}{close:8.2f}")


if __name__ == "__main__":
    main()

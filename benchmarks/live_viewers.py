"""What the live viewers (``--foxglove``, ``--rerun``) cost the loop: the same simulator
task with the streams off and on, side by side, in one run.

    python -m benchmarks.live_viewers                 # 3 rounds of every row
    python -m benchmarks.live_viewers --rounds 5
    python -m benchmarks.turn_overhead                # includes these rows (--live-rounds 0 skips)

The task is ``put all the cubes in the tray`` on the built-in PyBullet tabletop with the
offline planner and the SQLite run store (what ``harness demo`` runs). Rows:

- ``off``: no live sink (what every run without the flags does);
- ``foxglove, no client``: foxglove-sdk's server up, nobody connected;
- ``foxglove, client``: a Foxglove WebSocket client (another process) subscribed to every
  channel, receiving;
- ``foxglove, stalled client``: a client that subscribes and then never reads (its socket
  fills; the SDK drops its backlog beyond its bound);
- ``rerun web, no viewer``: the gRPC server and the bundled web viewer served, nobody
  connected (the server buffers for late viewers);
- ``both, client``: Foxglove with a client and Rerun web together.

Rounds interleave the rows (off, foxglove, ..., off, foxglove, ...) so drift on a shared
machine spreads over all of them. Columns: median wall seconds per turn over the rounds and
its ratio to ``off``; the loop thread's own time inside the sink per turn (the only work the
loop does for the viewers: a ``put_nowait``); the process's CPU seconds per turn (the sender
thread's encoding shows here, on a core the loop may share); events dropped by the sink.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.lib.tables import markdown_table, save_json

__all__ = ["ROWS", "LiveRow", "measure", "render"]

INSTRUCTION = "put all the cubes in the tray"
ROWS = (
    "off",
    "foxglove, no client",
    "foxglove, client",
    "foxglove, stalled client",
    "rerun web, no viewer",
    "both, client",
)

_CLIENT = textwrap.dedent(
    """
    import json, sys, time
    from websockets.sync.client import connect
    url, mode = sys.argv[1], sys.argv[2]
    with connect(url, subprotocols=["foxglove.websocket.v1", "foxglove.sdk.v1"]) as ws:
        subscribed = 0
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            message = ws.recv(timeout=600)
            if isinstance(message, str):
                data = json.loads(message)
                if data["op"] == "advertise":
                    subs = [{"id": c["id"] + 1, "channelId": c["id"]} for c in data["channels"]]
                    ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))
                    subscribed += len(subs)
                    print("subscribed", subscribed, flush=True)
                    if mode == "stalled":
                        time.sleep(600)
    """
)


@dataclass
class LiveRow:
    name: str
    seconds_per_turn: list[float] = field(default_factory=list)
    sink_us_per_turn: list[float] = field(default_factory=list)
    cpu_per_turn: list[float] = field(default_factory=list)
    dropped: int = 0
    turns: int = 0
    status: str = ""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(url: str, mode: str) -> subprocess.Popen[str]:
    client = subprocess.Popen(
        [sys.executable, "-c", _CLIENT, url, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # it is killed mid-read: its traceback is noise
        text=True,
    )
    assert client.stdout is not None
    line = client.stdout.readline()
    if not line.startswith("subscribed"):
        client.kill()
        raise RuntimeError(f"the Foxglove client did not subscribe: {line!r}")
    return client


def _one(
    row: str, folder: Path, instruction: str = INSTRUCTION
) -> tuple[float, float, float, int, int, str]:
    """One task with ``row``'s viewers: (s/turn, sink µs/turn, CPU s/turn, dropped, turns,
    status)."""
    from harness.cli.common import default_deployment
    from harness.config import HarnessConfig, apply_overrides
    from harness.export.live import open_live
    from harness.runtime.harness import Harness

    config = HarnessConfig.model_validate(
        apply_overrides(
            default_deployment(), [f"run.store={folder / 'store'}", "memory.enabled=false"]
        )
    )
    foxglove = 0 if row.startswith(("foxglove", "both")) else None
    rerun = ("web", _free_port(), _free_port()) if row.startswith(("rerun", "both")) else None
    client = None
    with Harness.from_config(config) as harness:
        sink = open_live(harness, foxglove_port=foxglove, rerun=rerun, notice=lambda _: None)
        try:
            if sink is not None and "client" in row and "no client" not in row:
                url = sink.outputs[0].url  # type: ignore[attr-defined]
                client = _client(url, "stalled" if "stalled" in row else "read")
            in_sink = 0.0
            started, cpu = time.perf_counter(), time.process_time()
            turns, status = 0, ""
            for event in harness.run_stream(instruction):
                if sink is not None:
                    t = time.perf_counter()
                    sink(event)
                    in_sink += time.perf_counter() - t
                if getattr(event, "type", "") == "done":
                    turns, status = event.turns, event.status  # type: ignore[attr-defined]
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        finally:
            if sink is not None:
                sink.close()
            if client is not None:
                client.kill()
                client.wait()
    turns = max(turns, 1)
    dropped = sink.dropped if sink is not None else 0
    return wall / turns, in_sink / turns * 1e6, cpu / turns, dropped, turns, status


def measure(
    rounds: int = 3,
    rows: Sequence[str] = ROWS,
    *,
    instruction: str = INSTRUCTION,
    warm_up: bool = True,
) -> dict[str, LiveRow]:
    """Every row ``rounds`` times, interleaved (after a warm-up run that is not measured;
    the tests skip it and use a shorter task: they check the rows run, not their figures)."""
    results = {row: LiveRow(row) for row in rows}
    with tempfile.TemporaryDirectory(prefix="live-viewers-") as tmp:
        if warm_up:
            _one("off", Path(tmp) / "warm-up", instruction)  # imports, PyBullet's first load
        for round_index in range(rounds):
            for index, row in enumerate(rows):
                folder = Path(tmp) / f"r{round_index}-{index}"
                per_turn, sink_us, cpu, dropped, turns, status = _one(row, folder, instruction)
                result = results[row]
                result.seconds_per_turn.append(per_turn)
                result.sink_us_per_turn.append(sink_us)
                result.cpu_per_turn.append(cpu)
                result.dropped += dropped
                result.turns, result.status = turns, status
    return results


def render(results: dict[str, LiveRow]) -> str:
    off = results.get("off")
    base = statistics.median(off.seconds_per_turn) if off else 0.0
    base_cpu = statistics.median(off.cpu_per_turn) if off else 0.0
    table = []
    for row in results.values():
        median = statistics.median(row.seconds_per_turn)
        table.append(
            [
                row.name,
                f"{row.turns} ({row.status})",
                f"{median * 1000:.1f}",
                f"{median / base:.2f}x" if base else "-",
                f"{statistics.median(row.sink_us_per_turn):.1f}",
                f"{statistics.median(row.cpu_per_turn) * 1000:.1f}",
                f"{statistics.median(row.cpu_per_turn) / base_cpu:.2f}x" if base_cpu else "-",
                str(row.dropped),
            ]
        )
    rounds = len(next(iter(results.values())).seconds_per_turn)
    return (
        f"Live viewers on the loop: '{INSTRUCTION}' on the PyBullet tabletop, offline planner, "
        f"SQLite store; median of {rounds} interleaved rounds\n\n"
        + markdown_table(
            [
                "viewers",
                "turns",
                "wall ms/turn",
                "x off",
                "loop in sink µs/turn",
                "CPU ms/turn",
                "CPU x off",
                "dropped",
            ],
            table,
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.live_viewers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        print("error: --rounds must be at least 1", file=sys.stderr)
        return 2
    results = measure(args.rounds)
    print(render(results))
    data = {name: asdict(row) for name, row in results.items()}
    kwargs = {"out_dir": args.out} if args.out else {}
    print(f"\nJSON written to {save_json('live_viewers.json', data, **kwargs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

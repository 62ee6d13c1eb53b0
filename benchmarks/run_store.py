"""What recording costs: per-turn time of the same task with each run store.

    python benchmarks/run_store.py [--turns 200] [--repeats 3]

One task of N turns (scripted model, a cheap tool, a 320x240 camera frame per turn) runs
with the in-memory store, the SQLite store (synchronous FULL and NORMAL), and the SQLite
store while another process reads it in a loop (what `harness show --follow` does). The
table gives the median time per turn, the store's extra cost per turn against memory,
and the ratio. Wall-clock figures: run it on an idle machine and compare ratios.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from embodiment.types import Observation
from harness import Harness, HarnessConfig, tool
from harness.providers import ScriptedModel, call, reply
from harness.store import MemoryRunStore, SQLiteRunStore

READER = r"""
import sqlite3, sys, time
path = sys.argv[1]
while True:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.execute("SELECT COUNT(*), MAX(pos) FROM events").fetchone()
        conn.execute("SELECT data FROM events ORDER BY pos DESC LIMIT 50").fetchall()
        conn.close()
    except sqlite3.Error:
        pass
    time.sleep(0.01)
"""


class Camera:
    def __init__(self) -> None:
        self.frame = 0

    def observe(self) -> Observation:
        self.frame += 1
        image = np.random.default_rng(self.frame).integers(0, 255, (240, 320, 3), dtype=np.uint8)
        return Observation(images={"front": image}, state={"frame": self.frame})


@tool
def note(text: str) -> str:
    """Record a note.

    Args:
        text: The note.
    """
    return f"noted: {text}"


def one_run(store_kind: str, turns: int, folder: Path) -> float:
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "memory": {"enabled": False},
            "run": {"store": None, "max_turns": turns + 1},
        }
    )
    if store_kind == "memory":
        store = MemoryRunStore()
    else:
        sync = "NORMAL" if store_kind == "sqlite NORMAL" else "FULL"
        store = SQLiteRunStore(folder, synchronous=sync)  # type: ignore[arg-type]
    reader = None
    if store_kind == "sqlite FULL + reader":
        reader = subprocess.Popen([sys.executable, "-c", READER, str(folder / "runs.db")])
    model = ScriptedModel([*(call("note", text=f"step {i}") for i in range(turns)), reply("ok")])
    try:
        with Harness(
            config, model=model, tools=[note], store=store, observation_provider=Camera()
        ) as harness:
            started = time.perf_counter()
            result = harness.run("benchmark")
            elapsed = time.perf_counter() - started
        assert result.status == "completed", result
    finally:
        store.close()
        if reader is not None:
            reader.kill()
            reader.wait()
    return elapsed / (turns + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    kinds = ["memory", "sqlite NORMAL", "sqlite FULL", "sqlite FULL + reader"]
    results: dict[str, float] = {}
    for kind in kinds:
        samples = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                samples.append(one_run(kind, args.turns, Path(tmp)))
        results[kind] = statistics.median(samples)
    base = results["memory"]
    print(f"{args.turns} turns, median of {args.repeats} runs, 320x240 JPEG frame per turn\n")
    print(f"{'store':<22} {'ms/turn':>9} {'+ms/turn':>9} {'ratio':>7}")
    for kind in kinds:
        value = results[kind]
        print(f"{kind:<22} {value * 1e3:9.2f} {(value - base) * 1e3:9.2f} {value / base:7.2f}")


if __name__ == "__main__":
    main()

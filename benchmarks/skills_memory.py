"""What skills and memory cost per task and per turn.

Run: ``python benchmarks/skills_memory.py``. Prints one table (median of repeats) and the
ratios that matter: the summary cache against recomputing every digest, and an atomic,
fsynced, locked ledger update against a plain file write.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.context import Budget, Context
from harness.context.admission import admit_skill
from harness.tokens import TokenEstimator
from memory import MemoryStore, TaskRecord, ToolOutcome
from skills import SkillCatalog

REPEATS = 30
TOOLS = [f"tool_{index:02d}" for index in range(20)]


def median_ms(action: Callable[[], object], repeats: int = REPEATS) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def seeded_store(folder: Path) -> MemoryStore:
    store = MemoryStore(folder)
    for turn in range(200):
        tool = TOOLS[turn % len(TOOLS)]
        store.record_tool_outcome(
            ToolOutcome(turn, tool, turn % 7 != 0, None, f"detail {turn} " + "x" * 60)
        )
    return store


def main() -> None:
    rows: list[tuple[str, float]] = []
    estimate = TokenEstimator().text

    rows.append(("discover + validate built-in skills", median_ms(SkillCatalog.from_paths)))
    catalog = SkillCatalog.from_paths()
    context = Context(TokenEstimator(), Budget(context_window=128_000, reserve_tokens=16_384))
    body = catalog.body("pick-and-place")
    rows.append(
        (
            "admission check of one skill body",
            median_ms(lambda: admit_skill(context, name="p", text=body)),
        )
    )

    with tempfile.TemporaryDirectory() as raw:
        folder = Path(raw)
        store = seeded_store(folder / "memory")
        outcome = ToolOutcome(1, "tool_00", True, "success", "held red_cube_1")
        rows.append(
            (
                "record_tool_outcome (lock+atomic+fsync)",
                median_ms(lambda: store.record_tool_outcome(outcome)),
            )
        )
        plain = folder / "plain.md"
        text = store.ledger_path("tool_00").read_text()
        rows.append(
            ("plain write_text of the same ledger", median_ms(lambda: plain.write_text(text)))
        )

        def cold() -> None:
            (store.ledger_folder / ".summaries.json").unlink(missing_ok=True)
            MemoryStore(folder / "memory").resident_text(budget_tokens=1500, estimate=estimate)

        rows.append((f"resident_text, {len(TOOLS)} ledgers, cold cache", median_ms(cold, 10)))
        warm = MemoryStore(folder / "memory")
        warm.resident_text(budget_tokens=1500, estimate=estimate)
        rows.append(
            (
                f"resident_text, {len(TOOLS)} ledgers, warm cache",
                median_ms(lambda: warm.resident_text(budget_tokens=1500, estimate=estimate)),
            )
        )
        record = TaskRecord(
            "t",
            "put the cubes in the tray",
            "completed",
            "done",
            "notes",
            [
                ToolOutcome(1, "tool_00", False, "failure", "not held"),
                ToolOutcome(2, "tool_01", True, None, "image"),
                ToolOutcome(3, "tool_00", True, "success", "held"),
            ],
        )
        rows.append(
            ("consolidate (rule-based, 1 lesson)", median_ms(lambda: store.consolidate(record), 10))
        )

    width = max(len(name) for name, _ in rows)
    print(f"{'operation'.ljust(width)}  median ms")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value:9.3f}")
    by_name = dict(rows)
    cold_key = f"resident_text, {len(TOOLS)} ledgers, cold cache"
    warm_key = f"resident_text, {len(TOOLS)} ledgers, warm cache"
    print()
    print(f"summary cache: warm is {by_name[cold_key] / by_name[warm_key]:.1f}x faster than cold")
    durable = by_name["record_tool_outcome (lock+atomic+fsync)"]
    plain_write = by_name["plain write_text of the same ledger"]
    print(f"durable ledger update costs {durable / plain_write:.1f}x a plain write")


if __name__ == "__main__":
    main()

"""The harness-written address index: every folded exchange stays reachable by address.

The oracle here is independent of the index code: it reads the checkpoint section and the
archived pages as text, exactly as a model would with ``recall``, and counts the reads.
"""

from __future__ import annotations

import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.context.compaction.archive import RECALL_MAX_CHARS
from harness.context.compaction.index import (
    FANOUT,
    INDEX_HEADING,
    AddressIndex,
    IndexState,
    exchange_line,
)
from harness.messages import ToolCall, ToolResultItem
from harness.store import MemoryRunStore
from tests.tiers import examples

ADDRESS = re.compile(r"archive://[A-Za-z0-9_./\-]+[A-Za-z0-9_]")


def entry(task: str, turn: int, *, tool: str = "read_sensor_log") -> tuple[str, str]:
    """A realistic entry line (the ids the harness really makes) and its output address."""
    call = ToolCall(id=f"call_{turn:016x}", name=tool, arguments={"index": turn, "unit": "N"})
    address = f"archive://{task}/{call.id}"
    result = ToolResultItem(
        call_id=call.id,
        name=tool,
        text=f"force log {turn}: 812 samples at 100 Hz, peak 11.4 N at t=0.42 s",
        archive=address,
        task_id=task,
        turn=turn,
    )
    return exchange_line(call, result, str), address


def fold_all(
    index: AddressIndex, count: int, *, folds: random.Random, task: str = "task_9f3c2a7b1e4d5f60"
) -> tuple[IndexState, list[str]]:
    state, addresses, turn = IndexState(), [], 0
    while turn < count:
        size = min(count - turn, folds.randint(1, 80))
        batch = []
        for _ in range(size):
            turn += 1
            line, address = entry(task, turn)
            batch.append(line)
            addresses.append(address)
        state = index.extend(state, batch, task_id=task, key=f"{turn:08x}")
    return state, addresses


def reads_to_each(section: str, store: MemoryRunStore, *, limit: int) -> dict[str, int]:
    """Every address a reader can reach from ``section``, with the ``recall`` calls it needs
    first (0: it is in ``section``): one breadth-first walk over the page addresses, each
    page read once, at most ``limit`` reads deep."""
    reads_for = dict.fromkeys(ADDRESS.findall(section), 0)
    frontier = list(reads_for)
    seen: set[str] = set()
    for reads in range(1, limit + 1):
        found: list[str] = []
        for page in frontier:
            if page in seen:
                continue
            seen.add(page)
            text = store.archive_get(page) or ""
            assert len(text) <= RECALL_MAX_CHARS, "a page must be readable by one recall"
            for address in ADDRESS.findall(text):
                if address not in reads_for:
                    reads_for[address] = reads
                    found.append(address)
        frontier = found
    return reads_for


def reads_to_find(address: str, section: str, store: MemoryRunStore, *, limit: int) -> int | None:
    """``recall`` calls a reader needs before it has ``address`` (0: it is in ``section``);
    None if ``limit`` reads do not find it."""
    if address in section:
        return 0
    return reads_to_each(section, store, limit=limit).get(address)


def test_three_thousand_exchanges_are_each_one_page_read_away() -> None:
    """The issue's bound: the first exchange of a 3,000-turn session's output is reached in
    two recalls (one page, then the output), and the section stays small."""
    store = MemoryRunStore()
    state, addresses = fold_all(AddressIndex(store), 3000, folds=random.Random(7))
    section = state.render()
    assert state.exchanges == 3000 and state.unindexed == 0
    assert all(page.level == 1 for page in state.pages)
    assert len(state.pages) <= FANOUT
    assert len(section) < 5000  # page lines are short; the inline part is bounded
    for address in (addresses[0], addresses[1499], addresses[-1]):
        assert reads_to_find(address, section, store, limit=1) is not None
    # every exchange is listed exactly once across the pages the section names
    listed = "\n".join(store.archive_get(page.address) or "" for page in state.pages)
    assert [a for a in ADDRESS.findall(listed) if "/call_" in a] == addresses


@settings(
    max_examples=examples(25),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    count=st.integers(1, 1500),
    page_chars=st.sampled_from([1200, 3000, RECALL_MAX_CHARS]),
    fanout=st.integers(2, 8),
    seed=st.integers(0, 1000),
)
def test_nested_pages_keep_every_exchange_reachable_and_the_section_bounded(
    count: int, page_chars: int, fanout: int, seed: int
) -> None:
    store = MemoryRunStore()
    index = AddressIndex(store, page_chars=page_chars, fanout=fanout)
    state, addresses = fold_all(index, count, folds=random.Random(seed))
    section = state.render()
    levels = max((page.level for page in state.pages), default=0)
    # at most `fanout` pages per level are listed, so the section grows with the depth only
    for level in range(1, levels + 1):
        assert sum(page.level == level for page in state.pages) <= fanout
    assert sum(page.entries for page in state.pages) == count
    reachable = reads_to_each(section, store, limit=levels)
    for address in addresses:
        assert address in reachable, address


def test_the_index_continues_from_a_checkpoint_it_never_saw_being_built() -> None:
    """The state lives in the checkpoint's metadata and the archive: a fresh index (a
    resumed process) reopens the last page and carries on without losing a line."""
    store = MemoryRunStore()
    first, addresses = fold_all(AddressIndex(store), 40, folds=random.Random(1))
    restored = IndexState(pages=first.pages, exchanges=first.exchanges)
    more = [entry("task_9f3c2a7b1e4d5f60", 40 + i) for i in range(1, 6)]
    state = AddressIndex(store).extend(
        restored, [line for line, _ in more], task_id="task_9f3c2a7b1e4d5f60", key="resumed"
    )
    listed = "\n".join(store.archive_get(page.address) or "" for page in state.pages)
    assert [a for a in ADDRESS.findall(listed) if "/call_" in a] == [
        *addresses,
        *(address for _, address in more),
    ]
    assert state.exchanges == 45
    assert state.render().startswith(INDEX_HEADING)


def test_without_a_store_the_index_says_what_it_could_not_keep() -> None:
    index = AddressIndex(None, inline=3)
    lines = [entry("task_a", turn)[0] for turn in range(1, 9)]
    state = index.extend(IndexState(), lines[:5], task_id="task_a", key="k1")
    state = index.extend(state, lines[5:], task_id="task_a", key="k2")
    assert state.pages == () and state.exchanges == 8 and state.unindexed == 5
    section = state.render()
    assert "5 older folded entries are not indexed" in section
    assert all(line in section for line in lines[-3:])

"""Properties of the eviction order over generated histories with episodes.

Histories are built the way the loop records them (a call and its result share a turn; the
episode an item carries is the one active when it was recorded, so a ``begin_episode``
result is inside the episode and its decision outside). The oracle below is written from
the issue's rules, not from the code under test: it looks only at the items before and
after, the episode book and the archive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.context import Budget, Context
from harness.context.compaction.archive import archive_address, item_address
from harness.context.compaction.folds import text_estimate, token_estimate
from harness.context.compaction.turns import protected_items
from harness.context.episodes.marks import EpisodeBook
from harness.context.eviction.by_structure import plan_eviction
from harness.context.eviction.cleanup import apply_eviction
from harness.messages import (
    AssistantItem,
    InstructionItem,
    Item,
    NoticeItem,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
    Verdict,
)
from harness.store.memory import MemoryRunStore
from harness.tokens import TokenEstimator
from tests.tiers import examples

pytestmark = pytest.mark.long

TASK = "task_p"
TRIES = {
    "examples": 0,
    "evicted_something": 0,
    "outputs_evicted": 0,
    "episodes_archived": 0,
    "collapsed": 0,
}


@dataclass
class Built:
    context: Context
    store: MemoryRunStore
    book: EpisodeBook
    originals: dict[str, str] = field(default_factory=dict)
    """Archive address -> the exact text written there by the "loop"."""


@st.composite
def histories(draw: st.DrawFn) -> Built:
    context = Context(TokenEstimator(), Budget(context_window=200_000, reserve_tokens=16_384))
    store = MemoryRunStore()
    book = context.episodes
    built = Built(context=context, store=store, book=book)
    context.append(InstructionItem(text="clear the table", task_id=TASK))
    active: str | None = None
    explorations: list[str] = []
    turns = draw(st.integers(min_value=1, max_value=28))
    for turn in range(1, turns + 1):
        if draw(st.booleans()):
            context.append(TaskNotesItem(text=f"notes at {turn} " * 8, task_id=TASK, turn=turn))
        choice = draw(st.sampled_from(["work", "work", "begin_x", "begin_a", "end"]))
        counter = turn
        call_id = f"call_{counter}"
        decision_episode = active or ""
        if choice == "begin_x" and active is None:
            name = f"x{counter}"
            book.begin(task_id=TASK, turn=turn, kind="exploration", name=name)
            call = ToolCall(id=call_id, name="begin_episode", arguments={"name": name})
            active, result_episode, text = name, name, f"exploration {name} begun"
        elif choice == "begin_a" and active is None and explorations:
            name = f"a{counter}"
            depends = draw(st.lists(st.sampled_from(explorations), min_size=1, max_size=2))
            book.begin(task_id=TASK, turn=turn, kind="action", name=name, depends_on=depends)
            call = ToolCall(id=call_id, name="begin_episode", arguments={"name": name})
            active, result_episode, text = name, name, f"action {name} begun"
        elif choice == "end" and active is not None:
            book.end(task_id=TASK, turn=turn, name=active, conclusion=f"{active} concluded")
            if book.get(active).kind == "exploration":  # type: ignore[union-attr]
                explorations.append(active)
            call = ToolCall(id=call_id, name="end_episode", arguments={"name": active})
            active, result_episode, text = None, "", "ended"
        else:
            tool = draw(st.sampled_from(["look", "find_objects", "pick", "place"]))
            size = draw(st.sampled_from([40, 400, 2000, 6000]))
            call = ToolCall(id=call_id, name=tool, arguments={"ref": f"obj_{counter % 5}"})
            result_episode = decision_episode
            text = f"{tool} output {counter}: " + "x" * size
        physical = call.name in ("pick", "place")
        error = draw(st.booleans()) and draw(st.booleans())
        verdict = (
            Verdict(status="failure" if error else "success", evidence="checked")
            if physical
            else None
        )
        context.append(
            AssistantItem(
                text=draw(st.sampled_from(["", "thinking about it " * 5])),
                tool_calls=[call],
                task_id=TASK,
                turn=turn,
                episode=decision_episode,
            )
        )
        address = archive_address(TASK, call_id)
        store.archive_put(address, text, task_id=TASK, call_id=call_id, tool=call.name)
        built.originals[address] = text
        context.append(
            ToolResultItem(
                call_id=call_id,
                name=call.name,
                text=text,
                archive=address,
                is_error=error and not physical,
                physical=physical,
                evaluation=verdict,
                task_id=TASK,
                turn=turn,
                episode=result_episode,
            )
        )
        if draw(st.integers(0, 9)) == 0:
            context.append(NoticeItem(text="harness notice " * 20, task_id=TASK, turn=turn))
    return built


def _calls_and_results_paired(items: list[Item]) -> bool:
    calls = {c.id for i in items if isinstance(i, AssistantItem) for c in i.tool_calls}
    results = {i.call_id for i in items if isinstance(i, ToolResultItem)}
    return calls == results


@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(built=histories(), need_share=st.sampled_from([0.05, 0.3, 0.7, 1.0, 2.0]))
def test_the_eviction_order_keeps_its_promises(built: Built, need_share: float) -> None:
    context, store, book = built.context, built.store, built.book
    TRIES["examples"] += 1
    before = list(context.accumulated)
    before_ids = {item.id: item for item in before}
    tokens = token_estimate(context)
    need = int(tokens(before) * need_share)
    plan = plan_eviction(
        before,
        book=book,
        tokens=tokens,
        text_tokens=text_estimate(context),
        need=need,
        protected=protected_items(before, tokens=tokens, ended_prose_tokens=0),
        keep_recent=2,
    )
    apply_eviction(context, plan, store)
    after = list(context.accumulated)
    after_by_id = {item.id: item for item in after}
    TRIES["evicted_something"] += int(not plan.empty)
    TRIES["outputs_evicted"] += int(bool(plan.rewrites))
    TRIES["episodes_archived"] += int(bool(plan.episodes))
    TRIES["collapsed"] += int(bool(plan.collapsed))

    # 1. No active episode is evicted: every item recorded in one is still there, unchanged.
    active = {e.name for e in book.active()}
    for item in before:
        if item.episode in active:
            assert item.id in after_by_id, f"{item.kind} of active episode {item.episode} left"

    # 2. No exploration before its dependants: once an exploration's work has left, no action
    #    that depends on it still has work in the context.
    def has_work(name: str, items: list[Item]) -> bool:
        return any(
            i.episode == name and not (isinstance(i, NoticeItem) and i.purpose == "episode")
            for i in items
        )

    for episode in book.episodes.values():
        if episode.kind != "exploration":
            continue
        if has_work(episode.name, before) and not has_work(episode.name, after):
            for dependant in book.dependants(episode.name):
                assert not has_work(dependant.name, after), (
                    f"exploration {episode.name} evicted while {dependant.name} is in context"
                )

    # 3. Calls are never separated from their results.
    assert _calls_and_results_paired(before)
    assert _calls_and_results_paired(after)

    # 4. Nothing is lost from the archive: every exact output is still readable, and every
    #    other item that left (or changed) can be read back at its address.
    for address, text in built.originals.items():
        assert store.archive_get(address) == text
    for item in before:
        kept = after_by_id.get(item.id)
        if kept is not None and kept == item:
            continue
        if isinstance(item, ToolResultItem):
            assert store.archive_get(item.archive or "") == built.originals[item.archive or ""]
        elif isinstance(item, AssistantItem):
            if item.text:
                assert store.archive_get(item_address(item)) == item.text
        else:
            assert store.archive_get(item_address(item)) == item.text

    # The instruction and the newest exchange stay; nothing new is larger than what left.
    assert before[0].id in after_by_id
    newest = [i for i in before if isinstance(i, AssistantItem)][-1]
    assert newest.id in after_by_id
    assert tokens(after) <= tokens(before)
    # Every item that is new is the harness's own (a reference, a record, the summary).
    for item in after:
        if item.id not in before_ids:
            assert isinstance(item, (ToolResultItem, NoticeItem))


def test_the_property_run_exercised_every_pass() -> None:
    """Run after the property above: the generator reached every pass (not a vacuous run)."""
    if TRIES["examples"] == 0:  # run alone: nothing to check
        return
    assert TRIES["evicted_something"] > TRIES["examples"] // 4
    assert TRIES["outputs_evicted"] > 0
    assert TRIES["episodes_archived"] > 0
    assert TRIES["collapsed"] > 0


CONDENSE_TRIES = {"examples": 0, "accepted": 0, "refused": 0}


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(built=histories(), with_reference=st.booleans())
def test_condense_context_keeps_the_same_promises(built: Built, with_reference: bool) -> None:
    """Refused: nothing changes. Accepted: calls stay with results, the newest four exchange
    groups, the instruction and every Task Notes snapshot stay, and every replaced output's
    address is in the memory (or in the full list it points to)."""
    from harness.context.episodes.condense import CondensedMemory, CondenseRefused, condense

    context, store, book = built.context, built.store, built.book
    CONDENSE_TRIES["examples"] += 1
    before = list(context.accumulated)
    references = [next(iter(built.originals))] if with_reference else []
    memory = CondensedMemory(completed_work=["did things"], references=references)
    try:
        done = condense(
            context,
            memory,
            task_id=TASK,
            turn=99,
            address_exists=lambda a: store.archive_get(a) is not None,
            store=store,
        )
    except CondenseRefused as refused:
        CONDENSE_TRIES["refused"] += 1
        assert list(context.accumulated) == before
        assert book.active() or "nothing to condense" in str(refused)
        return
    CONDENSE_TRIES["accepted"] += 1
    assert not book.active(TASK)
    after = list(context.accumulated)
    ids = {i.id for i in after}
    assert _calls_and_results_paired(after)
    decisions = [i for i in before if isinstance(i, AssistantItem)]
    for decision in decisions[-4:]:
        assert decision.id in ids
    assert all(i.id in ids for i in before if isinstance(i, (InstructionItem, TaskNotesItem)))
    text = done.memory.text
    listed = "\n".join(
        store.archive_get(a) or "" for a in re.findall(r"archive://\S+/exchanges", text)
    )
    for item in before:
        if isinstance(item, ToolResultItem) and item.id not in ids:
            assert item.archive and (item.archive in text or item.archive in listed)

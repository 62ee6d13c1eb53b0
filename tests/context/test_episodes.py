"""Episodes and ``condense_context`` through the real loop: the rules, their refusals,
items that know their episode, the run store, ``harness context`` and the HTML report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.cli import EXIT_OK, main
from harness.context.episodes.condense import MEMORY_MAX_TOKENS
from harness.context.episodes.marks import EpisodeBook, EpisodeError
from harness.events import CompactionEvent, EpisodeEvent, EventBase, ToolResultEvent
from harness.messages import AssistantItem, InstructionItem, NoticeItem, ToolResultItem
from harness.providers import ScriptedModel, call, reply
from harness.store.reader import RunLog
from harness.store.task_page import render_report


@tool
def look(area: str) -> str:
    """Look at an area.

    Args:
        area: Where to look.
    """
    return f"area {area}: " + "a mug, a plate and a fork; " * 40


def config(store: Path | None = None, **context: Any) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": str(store) if store else None, "max_turns": 60, "failure_budget": 60},
            "memory": {"enabled": False},
            "context": {"episodes": {"enabled": True}, **context},
        }
    )


def results(events: list[EventBase]) -> dict[str, list[ToolResultEvent]]:
    found: dict[str, list[ToolResultEvent]] = {}
    for event in events:
        if isinstance(event, ToolResultEvent):
            found.setdefault(event.name, []).append(event)
    return found


# ---------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([("begin", "exploration", "a", ["b"])], "an exploration depends on nothing"),
        ([("begin", "action", "a", [])], "names the completed exploration(s)"),
        ([("begin", "action", "a", ["ghost"])], "depends_on 'ghost': no such episode"),
        (
            [("begin", "exploration", "x", []), ("begin", "action", "a", ["x"])],
            "'x' (exploration) is still active",
        ),
        (
            [
                ("begin", "exploration", "x", []),
                ("end", "x", "c"),
                ("begin", "exploration", "x", []),
            ],
            "already exists",
        ),
        ([("begin", "exploration", "x", []), ("end", "x", "")], "ends with its conclusion"),
        ([("begin", "exploration", "x", []), ("end", "x", "y" * 700)], "keep it under 600"),
        ([("end", "nothing", "done")], "no episode named 'nothing'"),
        ([("begin", "exploration", "bad name", [])], "is not usable"),
    ],
)
def test_episode_rules_refuse_with_a_reason(steps: list[tuple[Any, ...]], message: str) -> None:
    book = EpisodeBook()
    with pytest.raises(EpisodeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        for step in steps:
            if step[0] == "begin":
                book.begin(task_id="t", turn=1, kind=step[1], name=step[2], depends_on=step[3])
            else:
                book.end(task_id="t", turn=2, name=step[1], conclusion=step[2])


def test_an_action_may_not_depend_on_an_action_or_an_open_exploration() -> None:
    book = EpisodeBook()
    book.begin(task_id="t", turn=1, kind="exploration", name="x")
    book.end(task_id="t", turn=2, name="x", conclusion="mug on the left")
    book.begin(task_id="t", turn=3, kind="action", name="a", depends_on=["x"])
    book.end(task_id="t", turn=4, name="a", conclusion="")
    with pytest.raises(EpisodeError, match="is an action"):
        book.begin(task_id="t", turn=5, kind="action", name="b", depends_on=["a"])
    assert [e.state for e in book.episodes.values()] == ["completed", "completed"]
    assert book.close_task("t", turn=9) == []


# ---------------------------------------------------------------------------- the loop


def test_items_know_their_episode_and_the_store_and_cli_show_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [
        call("begin_episode", kind="exploration", name="find-mug"),
        call("look", area="left"),
        call("end_episode", name="find-mug", conclusion="the mug is on the left"),
        call("begin_episode", kind="action", name="move-mug", depends_on=["find-mug"]),
        call("look", area="tray"),
        call("begin_episode", kind="exploration", name="too-early"),  # refused: one at a time
        call("end_episode", name="move-mug", conclusion="the mug is in the tray"),
        call("begin_episode", kind="exploration", name="left-open"),
        reply("done"),
    ]
    store = tmp_path / "store"
    with Harness.from_config(config(store), model=ScriptedModel(script), tools=[look]) as h:
        events = list(h.run_stream("move the mug"))
        report = h.context_report()
        items = list(h.context.accumulated)
    episode_events = [e for e in events if isinstance(e, EpisodeEvent)]
    assert [(e.name, e.status) for e in episode_events] == [
        ("find-mug", "begun"),
        ("find-mug", "ended"),
        ("move-mug", "begun"),
        ("move-mug", "ended"),
        ("left-open", "begun"),
        ("left-open", "abandoned"),  # the task ended with it open
    ]
    refused = results(events)["begin_episode"][2]
    assert refused.is_error and "'move-mug' (action) is still active" in refused.text
    looks = [i for i in items if isinstance(i, ToolResultItem) and i.name == "look"]
    assert [i.episode for i in looks] == ["find-mug", "move-mug"]
    decisions = {
        c.name + str(c.arguments.get("area", "")): i.episode
        for i in items
        if isinstance(i, AssistantItem)
        for c in i.tool_calls
    }
    assert decisions["lookleft"] == "find-mug" and decisions["looktray"] == "move-mug"

    rows = {r["id"]: r for r in report if r["lifetime"] == "episode"}
    assert rows["episode:move-mug"]["reason"].startswith(
        "action move-mug (completed, turns 4-7, depends on find-mug): the mug is in the tray"
    )
    assert rows["episode:left-open"]["reason"].startswith("exploration left-open (abandoned")
    assert any(r["episode"] == "find-mug" for r in report if r["lifetime"] == "accumulated")

    with RunLog(store) as log:
        task = log.tasks()[0]
        view = log.context_at(task.id)
        assert [(e.name, e.state) for e in view.episodes] == [
            ("find-mug", "completed"),
            ("move-mug", "completed"),
            ("left-open", "active"),  # at the last model call; abandoned when the task ended
        ]
        assert log.episodes(task.id)[-1].state == "abandoned"
        html = render_report(log, task.id)
    assert "<h2>Episodes</h2>" in html and "the mug is on the left" in html
    assert main(["context", task.id, "--store", str(store)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "episodes (3):" in out
    assert "action move-mug (completed, turns 4-7, depends on find-mug)" in out
    assert "tool_result [find-mug]" in out
    assert main(["context", task.id, "--store", str(store), "--json"]) == EXIT_OK
    stored = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {row["episode"] for row in stored} >= {"find-mug", "move-mug"}


def test_the_episode_status_reaches_the_model_with_the_observation() -> None:
    seen: list[str] = []

    def decide(request: Any) -> Any:
        seen.append(request.refreshed.observation if request.refreshed else "")
        step = len(seen)
        if step == 1:
            return call("begin_episode", kind="exploration", name="scan")
        if step == 2:
            return call("end_episode", name="scan", conclusion="two mugs")
        return reply("done")

    with Harness(config(), model=ScriptedModel(responder=decide), tools=[look]) as h:
        list(h.run_stream("scan"))
    assert seen[0] == ""
    assert "- active exploration scan" in seen[1]
    assert "- completed exploration scan: two mugs" in seen[2]


# ---------------------------------------------------------------------------- condense


def memory(**fields: Any) -> dict[str, Any]:
    return {"completed_work": ["looked at six areas"], **fields}


def run_condense(
    script: list[Any], *, store: Path | None = None, harness_config: HarnessConfig | None = None
) -> tuple[list[EventBase], list[Any], Harness]:
    chosen = harness_config or config(store)
    h = Harness.from_config(chosen, model=ScriptedModel(script), tools=[look])
    with h:
        events = list(h.run_stream("look around"))
        items = list(h.context.accumulated)
    return events, items, h


def looks(count: int, start: int = 0) -> list[Any]:
    return [call("look", area=f"a{index}") for index in range(start, start + count)]


def test_condense_replaces_old_exchanges_keeps_the_newest_four_and_one_live_memory() -> None:
    script = [
        *looks(7),
        call("condense_context", **memory(open_questions=["is the fork clean?"])),
        *looks(6, start=7),
        call("condense_context", **memory(completed_work=["looked at thirteen areas"])),
        reply("done"),
    ]
    events, items, h = run_condense(script)
    explicit = [e for e in events if isinstance(e, CompactionEvent) and e.mode == "explicit"]
    assert [e.status for e in explicit] == ["completed", "completed"]
    assert all(e.tokens_after < e.tokens_before for e in explicit)
    memories = [i for i in items if isinstance(i, NoticeItem) and i.purpose == "memory"]
    assert len(memories) == 1, "repeated calls replace the single live memory"
    text = memories[0].text
    assert "looked at thirteen areas" in text and "is the fork clean?" not in text
    assert "and the previous memory" in text
    # every replaced exchange keeps its address in context (carried over from the first):
    # the newest few listed in the memory, all of them in the full list one recall away
    listed = re.search(r"replaced exchanges are listed at (archive://\S+?)[\];]", text)
    assert listed is not None
    full = h.session.read_archive(listed.group(1)) or ""
    for index in range(10):
        assert f'look({{"area": "a{index}"}})' in full, index
    assert 'look({"area": "a9"})' in text
    # the newest four exchange groups (three looks and the call itself) stay verbatim
    kept = [i for i in items if isinstance(i, ToolResultItem) and i.name == "look"]
    assert [i.text.split(":")[0] for i in kept] == [f"area a{n}" for n in (10, 11, 12)]
    assert isinstance(items[0], InstructionItem)
    assert any(i.kind == "task_notes" for i in items)


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (
            [
                call("begin_episode", kind="exploration", name="x"),
                *looks(6),
                call("condense_context", **memory()),
            ],
            "episode 'x' (exploration) is active",
        ),
        (
            [*looks(6), call("condense_context", **memory(references=["archive://t/c"]))],
            "'archive://t/c' are not archive:// addresses of this session",
        ),
        (
            [*looks(6), call("condense_context", completed_work=["detail " * 400] * 6)],
            f"keep it under {MEMORY_MAX_TOKENS}",
        ),
        ([*looks(2), call("condense_context", **memory())], "nothing to condense yet"),
    ],
)
def test_condense_refusals_leave_the_context_unchanged(script: list[Any], reason: str) -> None:
    before: list[list[str]] = []

    def decide(request: Any) -> Any:
        # superseded Task Notes snapshots leave as the next one arrives (pruning, no cache
        # cost): everything else must stay
        before.append([i.id for i in request.items if i.kind != "task_notes"])
        step = script[len(before) - 1] if len(before) <= len(script) else reply("done")
        return step

    h = Harness(config(), model=ScriptedModel(responder=decide), tools=[look])
    with h:
        events = list(h.run_stream("look"))
    refused = results(events)["condense_context"][0]
    assert refused.is_error and refused.text.startswith("condense_context refused: ")
    assert reason in refused.text and refused.text.endswith("nothing changed")
    assert not [e for e in events if isinstance(e, CompactionEvent) and e.mode == "explicit"]
    # the request after the refusal holds every item of the one before, in order
    at = len(script)
    assert before[at][: len(before[at - 1])] == before[at - 1]


def test_a_reference_of_another_session_is_refused_and_one_of_this_session_accepted(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    events, _, _ = run_condense([*looks(1), reply("done")], store=store)
    foreign = results(events)["look"][0].archive
    assert foreign
    script = [*looks(6), call("condense_context", **memory(references=[foreign]))]
    events, _, _ = run_condense([*script, reply("done")], store=store)
    assert "not archive:// addresses of this session" in results(events)["condense_context"][0].text
    own: list[str] = []

    def decide(request: Any) -> Any:
        done = [i for i in request.items if isinstance(i, ToolResultItem)]
        if len(done) < 6:
            return call("look", area=f"b{len(done)}")
        if not own:
            own.append(done[0].archive or "")
            return call("condense_context", **memory(references=own))
        return reply("done")

    h = Harness.from_config(config(store), model=ScriptedModel(responder=decide), tools=[look])
    with h:
        events = list(h.run_stream("look"))
    result = results(events)["condense_context"][0]
    assert not result.is_error and result.text.startswith("context condensed")


# ---------------------------------------------------------------------------- sub-agents


def test_a_sub_agent_keeps_its_own_episodes_and_condenses_its_own_context() -> None:
    found = {
        "summary": "the mug is on the top shelf",
        "findings": [{"ref": "mug_7", "position": [0.4, -0.1, 0.8], "confidence": 0.9}],
        "verification": ["look(top)"],
    }
    child = ScriptedModel(
        [
            call("begin_episode", kind="exploration", name="shelf"),
            *looks(6),
            call("end_episode", name="shelf", conclusion="mug_7 on the top shelf"),
            call("condense_context", **memory()),
            reply(json.dumps(found)),
        ]
    )
    parent = ScriptedModel(
        [
            call("begin_episode", kind="exploration", name="parent-search"),
            call("delegate", goal="find the mug; report its ref", tools=["look"]),
            call("end_episode", name="parent-search", conclusion="mug_7"),
            reply("the mug is mug_7"),
        ]
    )
    cfg = config()
    cfg.subagents.enabled = True
    with Harness(cfg, model=parent, subagent_model=child, tools=[look]) as h:
        events = list(h.run_stream("fetch the mug"))
        main_items = list(h.context.accumulated)
        main_book = h.context.episodes
    by_name = results(events)
    assert not by_name["condense_context"][0].is_error  # the child's episode had ended
    assert not any(r.is_error for r in by_name["begin_episode"] + by_name["end_episode"])
    # the parent's episode was active all along: the child's condensation did not see it
    assert [e.name for e in main_book.episodes.values()] == ["parent-search"]
    assert not any(isinstance(i, NoticeItem) and i.purpose == "memory" for i in main_items)
    explicit = [e for e in events if isinstance(e, CompactionEvent) and e.mode == "explicit"]
    assert len(explicit) == 1 and explicit[0].task_id != main_items[0].task_id
    episodes = {
        (e.task_id == main_items[0].task_id, e.name, e.status)
        for e in events
        if isinstance(e, EpisodeEvent)
    }
    assert (False, "shelf", "ended") in episodes and (True, "parent-search", "ended") in episodes


def test_an_episode_open_at_a_crash_is_still_open_after_resume(tmp_path: Path) -> None:
    store = tmp_path / "store"
    cfg = config(store)
    script = [
        call("begin_episode", kind="exploration", name="shelf"),
        call("look", area="top"),
        reply("never reached"),
    ]
    harness = Harness.from_config(cfg, model=ScriptedModel(script), tools=[look])
    stream = harness.run_stream("find the mug")
    for event in stream:
        if isinstance(event, ToolResultEvent) and event.name == "look":
            break  # the process dies here, inside the episode
    session_id = harness.session_id
    harness.store.close()
    resumed_script = [
        call("end_episode", name="shelf", conclusion="mug_7 on the top shelf"),
        reply("done"),
    ]
    with Harness.resume(
        session_id, cfg, model=ScriptedModel(resumed_script), tools=[look]
    ) as resumed:
        assert [e.name for e in resumed.context.episodes.active()] == ["shelf"]
        events = list(resumed.resume_stream())
    ended = results(events)["end_episode"][0]
    assert not ended.is_error and "mug_7 on the top shelf" in ended.text

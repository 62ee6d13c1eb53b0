"""The console hub: one operator seat held by a secret holder, Stop for every holder,
refusals with reasons, hooks that never need a page.

The property test drives random sequences of connects, disconnects, claims, releases,
stops and revisions from pages of two secret holders and a viewer against a model of the
rules written here, independently of the hub: the first holder to connect takes a free
seat; it keeps it through disconnects and reconnects; it moves only by an explicit take
over or release; revisions come only from the seat; Stop is never refused to a holder and
turns ``stop_requested`` on only while a task runs; a task's end (or a new one) clears it.
"""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.console.hub import BUFFER, ConsoleHub
from harness.console.hub_types import Refused, TaskRequest
from tests.tiers import examples

PAGES = {"a": "g1", "b": "g2", "v": None}
"""Page connection -> the secret holder it belongs to (``v`` is a viewer)."""


def test_the_first_holder_takes_the_seat_and_viewers_never_do() -> None:
    hub = ConsoleHub()
    assert hub.connect("v", None) == "viewer"
    assert hub.state()["seat"] is None
    assert hub.connect("a", "g1") == "operator"
    assert hub.connect("b", "g2") == "standby"
    hub.task_began("task_1")
    with pytest.raises(Refused, match="operator seat"):
        hub.revise("g2", "not the seat")
    with pytest.raises(Refused, match="watching only"):
        hub.revise(None, "a viewer")
    assert hub.request_stop("page g2").effect == "stopping"  # any holder stops
    assert hub.stop_requested()


def test_the_seat_survives_a_disconnect_and_the_hooks_keep_working() -> None:
    hub = ConsoleHub()
    hub.connect("a", "g1")
    hub.connect("b", "g2")
    hub.task_began("task_1")
    hub.disconnect("a")
    assert hub.state()["seat"] == "g1" and not hub.state()["operator_connected"]
    assert hub.connect("b2", "g2") == "standby"  # connecting does not take a held seat
    assert hub.stop_requested() is False and hub.next_revision() is None
    assert hub.connect("a2", "g1") == "operator"  # back after a reload
    hub.revise("g1", "use the blue cube")
    assert hub.next_revision() == "use the blue cube"
    assert hub.next_revision() is None


def test_the_seat_moves_only_by_an_explicit_take_over_or_release() -> None:
    hub = ConsoleHub()
    hub.connect("a", "g1")
    with pytest.raises(Refused, match="take it over"):
        hub.claim("g2")
    assert hub.claim("g2", take_over=True) == "operator"
    assert hub.state()["seat_changes"][-1] == {
        **hub.state()["seat_changes"][-1],
        "from": "g1",
        "to": "g2",
    }
    with pytest.raises(Refused, match="does not hold"):
        hub.release("g1")
    assert hub.release("g2") == "standby"
    assert hub.claim("g1") == "operator"  # a free seat needs no take over


def test_stop_is_never_refused_and_follows_the_running_task_only() -> None:
    hub = ConsoleHub()
    assert hub.request_stop("page g1").effect == "nothing running"
    assert not hub.stop_requested()
    hub.task_began("task_1")
    assert hub.request_stop("page g1", address="127.0.0.1", client="a").effect == "stopping"
    assert hub.request_stop("script (bearer)").effect == "already stopping"
    hub.task_ended("task_1")
    assert not hub.stop_requested()
    hub.task_began("task_2")
    assert not hub.stop_requested()
    hub.task_ended("task_other")  # a stale end does not clear the running task
    assert hub.task_id == "task_2"
    assert [s.effect for s in hub.stops] == ["nothing running", "stopping", "already stopping"]
    assert hub.stops[1].address == "127.0.0.1" and hub.stops[1].task_id == "task_1"
    hub.note_stop("terminal (Ctrl-C)")
    assert hub.stops[-1].by == "terminal (Ctrl-C)" and hub.stops[-1].task_id == "task_2"


def test_a_stop_listener_is_told_at_every_press_after_the_cancel_is_set() -> None:
    hub = ConsoleHub()
    told: list[bool] = []
    hub.add_stop_listener(lambda: told.append(hub.stop_requested()))
    hub.request_stop("page g1")  # nothing running: the robot is stopped all the same
    hub.task_began("task_1")
    hub.request_stop("page g1")
    hub.request_stop("page g1")  # already stopping
    assert told == [False, True, True]


def test_start_is_accepted_only_while_a_loop_waits_for_tasks() -> None:
    hub = ConsoleHub()
    hub.connect("a", "g1")
    with pytest.raises(Refused, match="starts its own tasks"):
        hub.start("g1", TaskRequest(instruction="x"))
    got: list[TaskRequest | None] = []
    waiter = threading.Thread(target=lambda: got.append(hub.next_task(5.0)))
    waiter.start()
    deadline = time.monotonic() + 2
    while not hub.state()["accepts_tasks"] and time.monotonic() < deadline:
        time.sleep(0.01)
    hub.start("g1", TaskRequest(instruction="pick", max_turns=3))
    waiter.join(2)
    assert got == [TaskRequest(instruction="pick", max_turns=3)]
    assert hub.next_task(0.01) is None


def test_a_loop_polling_for_tasks_sends_viewers_nothing_new() -> None:
    hub = ConsoleHub()
    hub.connect("a", "g1")
    assert hub.next_task(0.001) is None
    before = hub.last_id()
    for _ in range(50):
        assert hub.next_task(0.001) is None
    assert hub.last_id() == before
    assert hub.state()["accepts_tasks"]
    hub.start("g1", TaskRequest(instruction="between polls"))  # the loop is between polls
    assert hub.next_task(0.001) == TaskRequest(instruction="between polls")


def test_a_question_is_answered_once_by_its_id_and_redacted_for_viewers() -> None:
    hub = ConsoleHub(redact=lambda text: text.replace("sk-secret", "[REDACTED]"))
    hub.connect("a", "g1")
    answers: list[str | None] = []
    asker = threading.Thread(
        target=lambda: answers.append(
            hub.ask("key sk-secret?", timeout_s=5, cancelled=lambda: False)
        )
    )
    asker.start()
    deadline = time.monotonic() + 2
    while hub.state()["question"] is None and time.monotonic() < deadline:
        time.sleep(0.01)
    question = hub.state()["question"]
    assert question["text"] == "key [REDACTED]?"
    with pytest.raises(Refused, match="no longer waiting"):
        hub.answer("g1", question["id"] + 1, "wrong question")
    with pytest.raises(Refused, match="operator seat"):
        hub.answer("g2", question["id"], "not the operator")
    hub.answer("g1", question["id"], " the blue one ")
    asker.join(2)
    assert answers == ["the blue one"]
    assert hub.state()["question"] is None
    with pytest.raises(Refused, match="no longer waiting"):
        hub.answer("g1", question["id"], "again")


def test_a_question_gives_up_on_cancel_and_on_its_deadline() -> None:
    hub = ConsoleHub()
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    started = time.monotonic()
    assert hub.ask("q", timeout_s=60, cancelled=cancel.is_set) is None
    assert cancel.is_set() and time.monotonic() - started < 60  # the cancel, not the deadline
    assert hub.ask("q", timeout_s=0.1, cancelled=lambda: False) is None
    assert hub.state()["question"] is None


def test_the_buffer_keeps_order_and_drops_the_oldest() -> None:
    hub = ConsoleHub()
    for n in range(BUFFER + 10):
        hub.publish("event", {"n": n})
    messages = hub.since(0)
    assert len(messages) == BUFFER
    assert [m.data["n"] for m in messages] == list(range(10, BUFFER + 10))
    last = messages[-1].id
    assert [m.data["n"] for m in hub.since(last - 2)] == [BUFFER + 8, BUFFER + 9]
    assert hub.since(last) == []


ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "connect",
                "disconnect",
                "claim",
                "take_over",
                "release",
                "stop",
                "revise",
                "begin",
                "end",
                "poll",
            ]
        ),
        st.sampled_from(sorted(PAGES)),
    ),
    max_size=40,
)


@settings(max_examples=examples(400), deadline=None)
@given(ACTIONS)
def test_the_seat_and_stop_follow_the_rules(actions) -> None:
    hub = ConsoleHub()
    # The model of the rules.
    connected: dict[str, int] = {}
    seat: str | None = None
    running = False
    stop = False
    revisions: list[str] = []
    for step, (action, page) in enumerate(actions):
        holder = PAGES[page]
        if action == "connect":
            connected[page] = connected.get(page, 0) + 1
            if holder is not None and seat is None:
                seat = holder
            role = "viewer" if holder is None else "operator" if seat == holder else "standby"
            assert hub.connect(page, holder) == role
        elif action == "disconnect":
            if not connected.get(page):
                continue
            connected[page] -= 1
            if not connected[page]:
                del connected[page]
            hub.disconnect(page)
        elif action in ("claim", "take_over"):
            if holder is None:
                continue  # the web app refuses a viewer before the hub
            if seat in (None, holder) or action == "take_over":
                seat = holder
                assert hub.claim(holder, take_over=action == "take_over") == "operator"
            else:
                with pytest.raises(Refused):
                    hub.claim(holder)
        elif action == "release":
            if holder is not None and seat == holder:
                seat = None
                hub.release(holder)
            else:
                with pytest.raises(Refused):
                    hub.release(holder or "")
        elif action == "stop":
            if holder is None:
                continue  # refused by the web app (no secret), never reaches the hub
            record = hub.request_stop(f"page {holder}")
            expected = "stopping" if running and not stop else "already stopping"
            assert record.effect == (expected if running else "nothing running")
            stop = stop or running
        elif action == "revise":
            ok = holder is not None and seat == holder and running
            if ok:
                hub.revise(holder, f"rev {step}")
                revisions.append(f"rev {step}")
            else:
                with pytest.raises(Refused):
                    hub.revise(holder, f"rev {step}")
        elif action == "begin":
            running, stop, revisions = True, False, []
            hub.task_began("task")
        elif action == "end":
            if running:
                running, stop, revisions = False, False, []
            hub.task_ended("task")
        elif action == "poll":
            expected = revisions.pop(0) if revisions else None
            assert hub.next_revision() == expected
        assert hub.stop_requested() == stop
        state = hub.state()
        assert state["seat"] == seat
        live_holders = {PAGES[p] for p in connected} - {None}
        assert state["operator_connected"] == (seat is not None and seat in live_holders)
        assert state["viewers"] == len(connected)
        assert state["stop_requested"] == stop


def test_a_session_listener_that_raises_never_stops_the_task() -> None:
    from harness.providers.scripted import ScriptedModel, reply
    from harness.runtime.harness import Harness

    seen: list[str] = []

    def boom(event) -> None:
        seen.append(event.type)
        raise RuntimeError("a viewer's bug")

    with Harness(model=ScriptedModel([reply("first"), reply("second")])) as harness:
        harness.session.add_listener(boom)
        result = harness.run("go")
        assert result.status == "completed" and result.report == "first"
        assert seen[0] == "task_started" and seen[-1] == "done"
        count = len(seen)
        harness.session.remove_listener(boom)
        assert harness.run("again").report == "second"
        assert len(seen) == count

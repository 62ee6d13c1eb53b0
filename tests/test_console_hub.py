"""The console hub: one operator seat, refusals with reasons, hooks that never need a page.

The property test drives random sequences of connects, disconnects, claims and actions
from a handful of pages against a model of the rules written here, independently of the
hub: an action is accepted only from the page holding the seat, the seat is the first
connected page's until it leaves, Stop turns ``stop_requested`` on only while a task runs,
and a task's end (or a new task) clears it.
"""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.console.hub import BUFFER, ConsoleHub, Refused, TaskRequest

CLIENTS = ["a", "b", "c"]


def test_first_page_holds_the_seat_and_others_are_refused_with_a_message() -> None:
    hub = ConsoleHub()
    assert hub.connect("a") == "operator"
    assert hub.connect("b") == "viewer"
    hub.task_began("task_1")
    with pytest.raises(Refused, match="read-only viewer"):
        hub.request_stop("b")
    assert not hub.stop_requested()
    hub.request_stop("a")
    assert hub.stop_requested()


def test_a_closed_operator_page_frees_the_seat_and_leaves_the_hooks_working() -> None:
    hub = ConsoleHub()
    hub.connect("a")
    hub.connect("b")
    hub.task_began("task_1")
    hub.disconnect("a")
    assert hub.stop_requested() is False and hub.next_revision() is None
    with pytest.raises(Refused):
        hub.request_stop("b")  # a viewer must claim first
    assert hub.claim("b") == "operator"
    hub.revise("b", "use the blue cube")
    assert hub.next_revision() == "use the blue cube"
    assert hub.next_revision() is None


def test_claiming_a_taken_seat_or_without_a_stream_is_refused() -> None:
    hub = ConsoleHub()
    hub.connect("a")
    with pytest.raises(Refused, match="taken"):
        hub.connect("b") and hub.claim("b")
    with pytest.raises(Refused, match="no open stream"):
        hub.claim("ghost")


def test_stop_applies_to_the_running_task_only() -> None:
    hub = ConsoleHub()
    hub.connect("a")
    with pytest.raises(Refused, match="no task is running"):
        hub.request_stop("a")
    hub.task_began("task_1")
    hub.request_stop("a")
    hub.task_ended("task_1")
    assert not hub.stop_requested()
    hub.task_began("task_2")
    assert not hub.stop_requested()
    hub.task_ended("task_other")  # a stale end does not clear the running task
    assert hub.task_id == "task_2"


def test_start_is_accepted_only_while_a_loop_waits_for_tasks() -> None:
    hub = ConsoleHub()
    hub.connect("a")
    with pytest.raises(Refused, match="starts its own tasks"):
        hub.start("a", TaskRequest(instruction="x"))
    got: list[TaskRequest | None] = []
    waiter = threading.Thread(target=lambda: got.append(hub.next_task(5.0)))
    waiter.start()
    deadline = time.monotonic() + 2
    while not hub.state()["accepts_tasks"] and time.monotonic() < deadline:
        time.sleep(0.01)
    hub.start("a", TaskRequest(instruction="pick", max_turns=3))
    waiter.join(2)
    assert got == [TaskRequest(instruction="pick", max_turns=3)]
    assert hub.next_task(0.01) is None


def test_a_loop_polling_for_tasks_sends_viewers_nothing_new() -> None:
    hub = ConsoleHub()
    hub.connect("a")
    assert hub.next_task(0.001) is None
    before = hub.last_id()
    for _ in range(50):
        assert hub.next_task(0.001) is None
    assert hub.last_id() == before
    assert hub.state()["accepts_tasks"]
    hub.start("a", TaskRequest(instruction="between polls"))  # the loop is between polls
    assert hub.next_task(0.001) == TaskRequest(instruction="between polls")


def test_a_question_is_answered_once_by_its_id_and_redacted_for_viewers() -> None:
    hub = ConsoleHub(redact=lambda text: text.replace("sk-secret", "[REDACTED]"))
    hub.connect("a")
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
        hub.answer("a", question["id"] + 1, "wrong question")
    with pytest.raises(Refused, match="read-only"):
        hub.answer("b", question["id"], "not the operator")
    hub.answer("a", question["id"], " the blue one ")
    asker.join(2)
    assert answers == ["the blue one"]
    assert hub.state()["question"] is None
    with pytest.raises(Refused, match="no longer waiting"):
        hub.answer("a", question["id"], "again")


def test_a_question_gives_up_on_cancel_and_on_its_deadline() -> None:
    hub = ConsoleHub()
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    started = time.monotonic()
    assert hub.ask("q", timeout_s=10, cancelled=cancel.is_set) is None
    assert time.monotonic() - started < 1.0
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
            ["connect", "disconnect", "claim", "stop", "revise", "begin", "end", "poll"]
        ),
        st.sampled_from(CLIENTS),
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(ACTIONS)
def test_only_the_seat_holder_acts_and_stop_follows_the_task(actions) -> None:
    hub = ConsoleHub()
    # The model of the rules.
    connected: dict[str, int] = {}
    seat: str | None = None
    running = False
    stop = False
    revisions: list[str] = []
    for step, (action, client) in enumerate(actions):
        if action == "connect":
            connected[client] = connected.get(client, 0) + 1
            seat = seat or client
            assert hub.connect(client) == ("operator" if seat == client else "viewer")
        elif action == "disconnect":
            if not connected.get(client):
                continue
            connected[client] -= 1
            if not connected[client]:
                del connected[client]
                if seat == client:
                    seat = None
            hub.disconnect(client)
        elif action == "claim":
            ok = client in connected and seat in (None, client)
            if ok:
                seat = client
                assert hub.claim(client) == "operator"
            else:
                with pytest.raises(Refused):
                    hub.claim(client)
        elif action in ("stop", "revise"):
            ok = seat == client and running
            act = hub.request_stop if action == "stop" else hub.revise
            args = (client,) if action == "stop" else (client, f"rev {step}")
            if ok:
                act(*args)
                if action == "stop":
                    stop = True
                else:
                    revisions.append(f"rev {step}")
            else:
                with pytest.raises(Refused):
                    act(*args)
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
        assert state["operator_connected"] == (seat is not None)
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

"""Built-in tools: query_user, notify_user, update_task_notes, recall."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.providers import ScriptedModel, call, reply


class Channel:
    def __init__(
        self,
        answer: str | None,
        *,
        wait: threading.Event | None = None,
        on_ask: Callable[[], None] | None = None,
    ) -> None:
        self.answer = answer
        self.wait = wait
        self.on_ask = on_ask
        self.asked: list[str] = []
        self.notified: list[tuple[str, str]] = []

    def ask(self, question: str, *, timeout_s: float, cancelled: Callable[[], bool]) -> str | None:
        self.asked.append(question)
        if self.on_ask is not None:
            self.on_ask()
        if self.wait is not None:
            while not cancelled():
                if self.wait.wait(0.01):
                    break
            return None
        return self.answer

    def notify(self, message: str, level: str) -> None:
        self.notified.append((message, level))


def test_query_user_answer_reaches_the_model(config: HarnessConfig) -> None:
    channel = Channel("the left one")
    model = ScriptedModel([call("query_user", question="Which cube?"), reply("ok")])
    with Harness(config, model=model, user_channel=channel) as h:
        events = list(h.run_stream("pick a cube"))
    assert channel.asked == ["Which cube?"]
    queries = [(e.status, e.answer) for e in events if e.type == "user_query"]
    assert queries == [("asked", None), ("answered", "the left one")]
    result = next(e for e in events if e.type == "tool_result")
    assert "the left one" in result.text


def test_query_user_timeout_ends_the_task_with_a_clear_reason(config: HarnessConfig) -> None:
    model = ScriptedModel([call("query_user", question="Which cube?"), reply("never")])
    with Harness(config, model=model, user_channel=Channel(None)) as h:
        events = list(h.run_stream("pick a cube"))
    done = events[-1]
    assert done.type == "done" and done.status == "failed"
    assert "query_user: no answer" in done.termination_reason
    assert model.remaining == 1


def test_query_user_cancelled_while_waiting(config: HarnessConfig) -> None:
    cancel = threading.Event()
    # The cancel comes while the question waits (not after a fixed delay, which a loaded
    # machine can spend before the question is even asked).
    channel = Channel(None, wait=threading.Event(), on_ask=cancel.set)
    model = ScriptedModel([call("query_user", question="Which cube?"), reply("never")])
    with Harness(config, model=model, user_channel=channel) as h:
        events = list(h.run_stream("pick a cube", should_cancel=cancel.is_set))
    assert events[-1].status == "cancelled"
    assert [e.status for e in events if e.type == "user_query"] == ["asked", "cancelled"]


def test_query_user_is_offered_only_with_a_channel(config: HarnessConfig) -> None:
    model = ScriptedModel([reply("x")])
    with Harness(config, model=model) as h:
        assert "query_user" not in h.tools
        assert "notify_user" in h.tools


def test_notify_user_emits_an_event(config: HarnessConfig) -> None:
    channel = Channel(None)
    model = ScriptedModel(
        [call("notify_user", message="tray is full", level="warning"), reply("ok")]
    )
    with Harness(config, model=model, user_channel=channel) as h:
        events = list(h.run_stream("tidy"))
    assert channel.notified == [("tray is full", "warning")]
    note = next(e for e in events if e.type == "notification")
    assert (note.message, note.level) == ("tray is full", "warning")


def test_recall_returns_exact_slices_of_truncated_output(config: HarnessConfig) -> None:
    config.context.record_max_chars = 600
    log_text = "".join(f"line {i:04d}: joint torque nominal\n" for i in range(400))

    @tool
    def read_log() -> str:
        """Read the robot log."""
        return log_text

    def responder(request: Any) -> Any:
        turn = len(model.requests)
        if turn == 1:
            return call("read_log")
        if turn == 2:
            result = (
                request.items[-2] if request.items[-1].kind == "task_notes" else request.items[-1]
            )
            assert result.kind == "tool_result" and len(result.text) <= 600
            assert "characters cut" in result.text and result.archive in result.text
            return call("recall", address=result.archive, offset=1000, limit=50)
        if turn == 3:
            return call("recall", address="archive://nope/none")
        return reply("done")

    model = ScriptedModel(responder=responder)
    with Harness(config, model=model, tools=[read_log]) as h:
        events = list(h.run_stream("read the log"))
    results = [e for e in events if e.type == "tool_result"]
    assert results[1].text.endswith(log_text[1000:1050])
    assert "continue with offset=1050" in results[1].text
    assert results[2].error_kind == "not_found"
    assert events[-1].status == "completed"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_search_archive_finds_old_evidence_across_tasks(
    config: HarnessConfig, tmp_path: Any, kind: str
) -> None:
    """An output the model no longer sees (another task, long ago) is found by text, in
    this session only, with an address recall can read."""
    from harness.store import MemoryRunStore, SQLiteRunStore

    store = MemoryRunStore() if kind == "memory" else SQLiteRunStore(tmp_path / "store")
    readings = iter(["gripper ok", "fault E-4411 on joint 6 (torque limit)", "all nominal"])

    @tool
    def read_faults() -> str:
        """Read the controller's fault log."""
        return "controller log\n" + "noise line\n" * 50 + next(readings)

    first = ScriptedModel([call("read_faults"), call("read_faults"), reply("logged")])
    with Harness(config, model=first, tools=[read_faults], store=store) as h:
        h.run("check the controller")
        h.reset_session()  # the old outputs leave the context entirely
        second = ScriptedModel(
            [
                call("read_faults"),
                call("search_archive", query="e-4411"),
                call("search_archive", query="no such code"),
                reply("found it"),
            ]
        )
        h.model = second
        events = list(h.run_stream("which joint faulted earlier?"))
    # another session sharing the store does not see this session's archive
    other_model = ScriptedModel([call("search_archive", query="E-4411"), reply("x")])
    with Harness(config, model=other_model, store=store) as other:
        other_events = list(other.run_stream("search"))
    results = [e for e in events if e.type == "tool_result"]
    found = results[1].text
    assert found.startswith("1 archived output(s) contain 'e-4411'")
    assert "fault E-4411 on joint 6" in found
    address = found.split("- ", 1)[1].split(" ", 1)[0]
    assert "E-4411" in (store.archive_get(address) or "")
    assert results[2].text.startswith("no archived output of this session contains")
    other_result = next(e for e in other_events if e.type == "tool_result")
    assert other_result.text.startswith("no archived output")
    store.close()

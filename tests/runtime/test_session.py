"""Session lifecycle: one task at a time, reset, close, owned resources, context layout."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from harness import Harness, HarnessBusyError, HarnessClosedError, HarnessConfig, tool
from harness.errors import CloseError, UnknownContextWindowError
from harness.images import encode_frame
from harness.messages import ModelResponse
from harness.providers import ScriptedModel, call, reply
from harness.tools import ToolOutput
from tests.conftest import fake_robot


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def test_second_task_from_another_thread_is_refused(config: HarnessConfig) -> None:
    gate = threading.Event()
    release = threading.Event()

    def responder(request: Any) -> ModelResponse:
        gate.set()
        release.wait(5)
        return reply("first done")

    h = Harness(config, model=ScriptedModel(responder=responder))
    results: dict[str, Any] = {}

    def first() -> None:
        results["first"] = h.run("first task")

    worker = threading.Thread(target=first)
    worker.start()
    assert gate.wait(5)
    with pytest.raises(HarnessBusyError):
        h.run_stream("second task")
    with pytest.raises(HarnessBusyError):
        h.reset_session()
    with pytest.raises(HarnessBusyError):
        h.close()
    release.set()
    worker.join(5)
    assert results["first"].status == "completed"
    assert results["first"].report == "first done"
    h.close()


def test_second_task_in_same_thread_is_refused(config: HarnessConfig) -> None:
    h = Harness(config, model=ScriptedModel([call("ping"), reply("a")]), tools=[ping])
    stream = h.run_stream("one")
    next(stream)
    with pytest.raises(HarnessBusyError):
        h.run_stream("two")
    events = list(stream)
    assert events[-1].type == "done" and events[-1].status == "completed"
    h.close()


def test_reset_session_clears_accumulated_but_keeps_tools(config: HarnessConfig) -> None:
    model = ScriptedModel([call("ping"), reply("a"), call("ping"), reply("b")])
    h = Harness(config, model=model, tools=[ping])
    h.run("one")
    assert h.context.accumulated
    h.reset_session()
    assert h.context.accumulated == []
    assert "ping" in h.tools
    h.run("two")
    texts = [getattr(i, "text", "") for i in model.requests[-1].items]
    assert "one" not in texts and "two" in texts
    result = [i for i in model.requests[-1].items if i.kind == "tool_result"]
    assert result and result[0].text == "pong"
    h.close()


def test_close_releases_owned_resources_once_in_reverse_order(config: HarnessConfig) -> None:
    order: list[str] = []

    class Resource:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            order.append(self.name)

    h = Harness(
        config,
        model=ScriptedModel([reply("x")]),
        owned_resources=[Resource("a"), Resource("b"), lambda: order.append("c")],
    )
    h.close()
    h.close()
    assert order == ["c", "b", "a"]
    with pytest.raises(HarnessClosedError):
        h.run_stream("after close")


def test_close_attempts_every_resource_and_aggregates_errors(config: HarnessConfig) -> None:
    order: list[str] = []

    def bad() -> None:
        order.append("bad")
        raise RuntimeError("stuck")

    h = Harness(
        config,
        model=ScriptedModel([reply("x")]),
        owned_resources=[lambda: order.append("first"), bad],
    )
    with pytest.raises(CloseError) as info:
        h.close()
    assert order == ["bad", "first"]
    assert "stuck" in str(info.value)


def test_failed_construction_closes_what_was_built(config: HarnessConfig) -> None:
    order: list[str] = []
    config.context.compaction.reserve_tokens = 10_000_000  # larger than any window
    from harness.errors import ConfigError

    with pytest.raises(ConfigError, match="reserve_tokens"):
        Harness.from_config(
            config,
            model=ScriptedModel([reply("x")]),
        )
    # through the factory, owned parts built before the failure are closed
    from harness.assembly import build as factory

    original = factory.build_parts

    def build_with_resource(cfg: Any, *, given: dict[str, Any]) -> Any:
        parts, closers = original(cfg, given=given)
        closers.append(("sim", lambda: order.append("sim closed")))
        return parts, closers

    factory.build_parts = build_with_resource  # type: ignore[assignment]
    try:
        with pytest.raises(ConfigError):
            Harness.from_config(config, model=ScriptedModel([reply("x")]))
    finally:
        factory.build_parts = original  # type: ignore[assignment]
    assert order == ["sim closed"]


def test_unknown_context_window_is_refused(config: HarnessConfig) -> None:
    model = ScriptedModel([reply("x")], name="mystery-model", context_window=None)
    config.model.name = "mystery-model"
    with pytest.raises(UnknownContextWindowError, match=r"model\.context_window"):
        Harness(config, model=model)


# --------------------------------------------------------------------------- context layout


def test_resident_prefix_is_byte_identical_across_turns(config: HarnessConfig) -> None:
    model = ScriptedModel([call("ping"), call("ping"), call("ping"), reply("x")])
    with Harness(config, model=model, tools=[ping], profile_text="Robot: test arm") as h:
        h.run("go")
    systems = [[b.model_dump_json() for b in r.system] for r in model.requests]
    tools = [[t.model_dump_json() for t in r.tools] for r in model.requests]
    assert all(s == systems[0] for s in systems)
    assert all(t == tools[0] for t in tools)
    assert any(b.name == "embodiment" for b in model.requests[0].system)
    # accumulated grows append-only, so the stable prefix grows too
    stable = [r.stable_items for r in model.requests]
    assert stable[1:] == sorted(stable[1:]) and stable[-1] > 0


def test_request_order_is_resident_accumulated_refreshed(
    config: HarnessConfig, log: list[str]
) -> None:
    model = ScriptedModel([reply("x")])
    with Harness(config, model=model, driver=fake_robot(log)) as h:
        h.run("look")
    request = model.requests[0]
    assert request.system[0].name == "system"
    assert request.items[0].kind == "instruction"
    assert request.refreshed is not None
    assert "Observation" in request.refreshed.observation
    assert [i.label for i in request.refreshed.images] == ["front"]


def test_images_reach_only_the_call_that_consumes_them(
    config: HarnessConfig, log: list[str]
) -> None:
    frame = np.full((32, 32, 3), 128, dtype=np.uint8)
    snapshot = encode_frame(frame, label="wrist")

    @tool
    def take_picture() -> ToolOutput:
        """Take a picture with the wrist camera."""
        return ToolOutput(text="took a picture", images=[snapshot])

    user_image = encode_frame(np.zeros((16, 16, 3), dtype=np.uint8), label="user")
    model = ScriptedModel([call("take_picture"), call("ping"), reply("x")])
    with Harness(config, model=model, tools=[take_picture, ping], driver=fake_robot(log)) as h:
        h.run("photograph", images=[user_image])
        assert h.store.images[snapshot.sha256] == snapshot  # type: ignore[attr-defined]
    labels = [[i.label for i in r.refreshed.images] for r in model.requests]  # type: ignore[union-attr]
    assert labels[0] == ["user", "front"]  # instruction image: first call only
    assert labels[1] == ["wrist", "front"]  # tool image: the next call only
    assert labels[2] == ["front"]  # only the fresh observation remains
    result = next(i for i in model.requests[2].items if i.kind == "tool_result")
    assert result.images[0].sha256 == snapshot.sha256
    assert "image wrist" in result.images[0].placeholder()

"""A tool can never crash the task: whatever a handler returns or emits, the loop goes on.

The oracle for "can this be recorded" is written here, from JSON's rules, independently of
``harness.tools.checked_output``: string (or number, bool, null) keys, no container inside
itself, and leaves that are JSON values or convert (numpy arrays, sets, tuples, pydantic
models, anything whose ``str`` works). Hypothesis draws odd values; each one goes through
the real loop with a scripted model, and the task must complete with one recorded result.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from harness import Harness, HarnessConfig, tool
from harness.events import DoneEvent, EventBase, ProgressEvent, ToolResultEvent
from harness.messages import ToolResultItem
from harness.providers import ScriptedModel, call, reply
from harness.tools import ToolContext, ToolOutput, checked_output
from tests.tiers import examples, floor

TRIES = {"count": 0, "error_results": 0, "ok_results": 0}


@pytest.fixture
def config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )


class NoStr:
    """An object without a JSON or text form: ``str`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text form")

    def __repr__(self) -> str:
        return "NoStr()"


class Opaque:
    """An object whose only form is its ``str`` (recorded as that text)."""

    def __str__(self) -> str:
        return "opaque thing"


class Pose(BaseModel):
    x: float
    y: float


# ------------------------------------------------------------------ the independent oracle


def recordable(value: Any, seen: frozenset[int] = frozenset()) -> bool:
    """Whether ``value`` has a JSON form by JSON's own rules (see the module docstring)."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return True  # NaN and infinity are written as NaN/Infinity, still readable text
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, BaseModel):
        return True
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if id(value) in seen:
            return False
        inner = seen | {id(value)}
        if isinstance(value, dict):
            keys_ok = all(k is None or isinstance(k, (str, int, float, bool)) for k in value)
            return keys_ok and all(recordable(v, inner) for v in value.values())
        return all(recordable(v, inner) for v in value)
    return not isinstance(value, NoStr)  # any other object is recorded by its str


# ------------------------------------------------------------------ strategies

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.builds(NoStr),
    st.builds(Opaque),
    st.builds(Pose, x=st.floats(-1, 1), y=st.floats(-1, 1)),
    st.lists(st.integers(0, 9), max_size=4).map(np.array),
)
keys = st.one_of(
    st.text(max_size=5),
    st.integers(-5, 5),
    st.tuples(st.integers(0, 3), st.integers(0, 3)),
    st.frozensets(st.integers(0, 3), max_size=2),
)
values = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def odd_values(draw: st.DrawFn) -> Any:
    """Values, sometimes made to contain themselves."""
    value = draw(values)
    if draw(st.booleans()):
        if isinstance(value, list):
            value.append(value)
        elif isinstance(value, dict):
            value["self"] = value
    return value


# ------------------------------------------------------------------ through the loop


def _run(config: HarnessConfig, handler: Any) -> tuple[list[EventBase], Harness]:
    odd = tool(handler, name="odd")
    model = ScriptedModel([call("odd"), reply("carried on")])
    h = Harness(config, model=model, tools=[odd])
    events = list(h.run_stream("call the odd tool"))
    return events, h


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=odd_values())
def test_any_return_value_becomes_a_result_and_the_loop_goes_on(
    config: HarnessConfig, value: Any
) -> None:
    TRIES["count"] += 1

    def handler() -> Any:
        return value

    events, h = _run(config, handler)
    try:
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.status == "completed", done
        assert done.report == "carried on"
        [result] = [e for e in events if isinstance(e, ToolResultEvent)]
        expected_ok = recordable(value)
        assert result.is_error is (not expected_ok), (value, result.text)
        if not expected_ok:
            TRIES["error_results"] += 1
            assert result.error_kind == "invalid_result"
            assert "cannot record" in result.text
        else:
            TRIES["ok_results"] += 1
        # recorded and archived, exactly as the model read it
        [item] = [i for i in h.session.context.accumulated if isinstance(i, ToolResultItem)]
        assert item.archive and h.store.archive_get(item.archive) is not None
        assert h.store.archive_get(item.archive).startswith(item.text[:50])  # type: ignore[union-attr]
    finally:
        h.close()


def test_the_fuzz_saw_both_kinds_of_result() -> None:
    """Guards the property above: it must have produced errors and successes."""
    if TRIES["count"] == 0:
        pytest.skip("the property test did not run first")
    assert TRIES["error_results"] >= floor(6) and TRIES["ok_results"] >= floor(6), TRIES


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({(1, 2): "tuple key"}, "keys must be str"),
        (lambda: (lambda a: (a.append(a), a)[1])([]), "Circular reference"),
        ([NoStr()], "no text form"),
        (ToolOutput(text=42), "text is a int"),  # type: ignore[arg-type]
        (ToolOutput(text="x", images=["not an image"]), "ImagePart"),  # type: ignore[list-item]
        (ToolOutput(text="x", applied={(0, 0): 1}), "applied has no JSON form"),
        (ToolOutput(text="x", error_kind=3), "error_kind"),  # type: ignore[arg-type]
    ],
)
def test_each_named_case_reads_as_an_error_result(value: Any, problem: str) -> None:
    value = value() if callable(value) else value
    output = checked_output("odd", value)
    assert output.is_error and output.error_kind == "invalid_result"
    assert problem in output.render()


def test_plain_values_pass_unchanged() -> None:
    for value in ("text", {"a": [1, 2.5, None]}, [1, (2, 3)], {1: "int key"}, math.inf):
        output = checked_output("odd", value)
        assert not output.is_error, (value, output.render())


# ------------------------------------------------------------------ ctx.emit


@pytest.mark.parametrize(
    "bad",
    [
        "a string",
        {"type": "progress", "text": "a dict shaped like an event"},
        42,
        DoneEvent(status="completed", termination_reason="a tool must not end the stream"),
    ],
    ids=["str", "dict", "int", "done"],
)
def test_emitting_something_that_is_not_an_event_is_an_error_result(
    config: HarnessConfig, bad: Any
) -> None:
    def handler(ctx: ToolContext) -> str:
        ctx.emit(bad)
        return "unreachable"

    events, h = _run(config, handler)
    h.close()
    dones = [e for e in events if isinstance(e, DoneEvent)]
    assert len(dones) == 1 and dones[0].status == "completed"
    assert dones[0].termination_reason != "a tool must not end the stream"
    [result] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.is_error and result.error_kind == "exception"
    assert "ctx.emit() takes a harness event" in result.text


def test_a_handler_that_catches_the_emit_error_goes_on(config: HarnessConfig) -> None:
    def handler(ctx: ToolContext) -> str:
        with contextlib.suppress(TypeError):
            ctx.emit(object())
        ctx.emit(ProgressEvent(text="halfway", source="tool"))
        return "done"

    events, h = _run(config, handler)
    h.close()
    assert [e.text for e in events if isinstance(e, ProgressEvent) and e.source == "tool"] == [
        "halfway"
    ]
    [result] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert not result.is_error and result.text == "done"


def test_a_progress_report_that_is_not_text_is_an_error_result(config: HarnessConfig) -> None:
    def handler(ctx: ToolContext) -> str:
        ctx.report_progress({"not": "text"})  # type: ignore[arg-type]
        return "unreachable"

    events, h = _run(config, handler)
    h.close()
    assert isinstance(events[-1], DoneEvent) and events[-1].status == "completed"
    [result] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.is_error and result.error_kind == "exception"

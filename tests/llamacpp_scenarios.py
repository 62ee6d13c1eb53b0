"""What the harness must guarantee against a real OpenAI-compatible local server, as
scenarios: llama.cpp's own ``llama-server`` (the upstream server most users run) and
``llama-cpp-python``'s server, or any other that speaks the API.

Each scenario takes a ``base_url`` and runs against whatever answers there: a real server
(``tests/real/``, and once through a recording proxy to write the transcripts under
``tests/fixtures/llamaserver/`` and ``tests/fixtures/llamacpp/``), or the loopback wire
server replaying those transcripts (``tests/providers/test_llamacpp_replay.py``). Each has a
``check_*`` function that both use, given the scenario's result and the exchanges the
server had (requests and its answers), so the replayed and the live runs are held to the
same assertions.

The checks assert what the harness guarantees with any compliant server, never one
server's accidents: where a server may behave either way (stream tool calls or not, report
usage in streams or not, refuse an image or read it as text) or a model's choice decides
the path (a tool call or a text, a cut or a whole answer), every path is accepted and the
guarantee is checked on the path taken. The guarantees: a request that offers tools says
``tool_choice: "auto"`` and no assistant turn goes out as ``null``; a fallback to an
unstreamed request happens only after a stream that carried nothing; an overflow is a
:class:`ContextOverflowError` with the server's numbers; an empty answer is never a
response; images never reach a model that does not take them; a cut call never runs and
is recorded cut; every request the server answered is counted in ``done.usage`` (the
oracle: the server's own usage reports in the exchanges); a task ends with exactly one
``done``.

``facts`` is different: plain HTTP requests recording the server's behaviour the adapter
must cope with (what it does with ``"content": null``, streamed tool requests, streamed
overflows, stream usage, image parts). ``check_facts`` asserts only what every compliant
server does and returns the rest for the record.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.config import ModelConfig
from harness.errors import ContextOverflowError, EmptyResponseError, ModelError
from harness.images import encode_frame
from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    ModelResponse,
    RefreshedBlock,
    SystemBlock,
    ToolCall,
    ToolResultItem,
    ToolSpec,
)
from harness.providers.base import Final
from harness.providers.openai import OpenAIChatModel
from harness.providers.vision import probe_images
from tests.example_loader import load_example
from tests.transcripts import Exchange

__all__ = [
    "MOVE_TO",
    "SCENARIOS",
    "check_empty_answer",
    "check_facts",
    "check_overflow",
    "check_tool_session",
    "check_vision",
    "cut_call",
    "empty_answer",
    "facts",
    "model_config",
    "overflow",
    "tool_session",
    "vision",
]

MODEL = "gemma"
"""The ``--model_alias`` the server runs under (not in the built-in table, on purpose)."""
N_CTX = 8192
"""The server's ``--n_ctx``."""

MOVE_TO = ToolSpec(
    name="move_to",
    description="Move the gripper to x, y, z (metres).",
    parameters={
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "y": {"type": "number"},
            "z": {"type": "number"},
        },
        "required": ["x", "y", "z"],
    },
)
SYSTEM = [SystemBlock(name="system", text="You drive a robot arm. Use the tools.")]
INSTRUCTION = "Move the gripper to x=0.2 y=0.3 z=0.1."
BRIEF = "Scene: red_cube_1 at (0.22, 0.71, 0.02); tray_1 at (0.8, 0.2, 0.0)."


def model_config(base_url: str, **overrides: Any) -> ModelConfig:
    data: dict[str, Any] = {
        "provider": "openai",
        "name": MODEL,
        "base_url": base_url,
        "context_window": N_CTX,
        "timeout_s": 300.0,
        "max_retries": 1,
        "options": {"retry_base_s": 0.01, "retry_max_s": 0.02},
    }
    data.update(overrides)
    return ModelConfig.model_validate(data)


def chat(exchanges: list[Exchange]) -> list[Exchange]:
    """The chat completions among ``exchanges`` (not the server's own endpoints)."""
    return [e for e in exchanges if e.is_chat]


def bodies_of(exchanges: list[Exchange]) -> list[dict[str, Any]]:
    return [e.request for e in chat(exchanges)]


def reported_usage(exchange: Exchange) -> dict[str, int] | None:
    """The usage the server reported in one answer (whole or streamed), or None."""
    if exchange.status != 200 or not exchange.body.strip():
        return None
    if "text/event-stream" in exchange.content_type:
        found = None
        for data in exchange.sse_data():
            if data != "[DONE]":
                found = json.loads(data).get("usage") or found
        return found
    return exchange.json().get("usage")


def check_usage_counted(usage: Any, exchanges: list[Exchange]) -> None:
    """Every chat request the server answered is in ``usage``: one request each, its
    reported tokens, and the ones without a report counted as unreported (the oracle is
    the server's own answers, not the harness's accounts)."""
    answered = [e for e in chat(exchanges) if e.status == 200]
    reports = [reported_usage(e) for e in answered]
    assert usage.requests == len(answered), (usage, len(answered))
    assert usage.prompt_tokens == sum(r["prompt_tokens"] for r in reports if r), usage
    assert usage.output_tokens == sum(r["completion_tokens"] for r in reports if r), usage
    assert usage.unreported_requests == sum(1 for r in reports if not r), usage


def check_no_null_content(bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        assert all(m.get("content") is not None for m in body["messages"]), body


def check_tool_choice(bodies: list[dict[str, Any]]) -> None:
    """A request that offers tools says ``tool_choice: "auto"``; a tool-less one never
    carries it."""
    for body in bodies:
        assert ("tools" in body) == (body.get("tool_choice") == "auto"), body.get("tool_choice")


def check_fallbacks(exchanges: list[Exchange]) -> None:
    """An unstreamed request follows only a stream that carried nothing, and is the same
    request otherwise."""
    calls = chat(exchanges)
    for before, after in itertools.pairwise(calls):
        if before.request.get("stream") and not after.request.get("stream"):
            if after.request.get("max_tokens") == 1 or "tools" not in after.request:
                continue
            if before.status == 200 and not before.body.strip():
                same = {k: v for k, v in before.request.items() if k not in STREAM_KEYS}
                assert same == after.request


STREAM_KEYS = ("stream", "stream_options")


def _final(model: OpenAIChatModel, request: ModelRequest) -> tuple[ModelResponse, bool]:
    finals = [c for c in model.stream(request) if isinstance(c, Final)]
    assert len(finals) == 1
    return finals[0].response, finals[0].usage_reported


# =========================================================================== tool session


@dataclass
class ToolSession:
    first: ModelResponse
    second: ModelResponse
    summary: ModelResponse
    summary_usage_reported: bool
    streams_tool_requests: bool


def tool_session(base_url: str) -> ToolSession:
    """Two tool-offering turns and one tool-less request, as the loop and summarizer make
    them: the first turn finds out whether the server streams tool requests, the second
    sends the first's tool call back (an assistant turn without text)."""
    model = OpenAIChatModel(model_config(base_url, max_output_tokens=256))
    try:
        items: list[Any] = [InstructionItem(text=INSTRUCTION)]
        request = ModelRequest(system=SYSTEM, tools=[MOVE_TO], items=items)
        first, _ = _final(model, request)
        call = first.tool_calls[0] if first.tool_calls else ToolCall(id="call_1", name="move_to")
        items += [
            AssistantItem(text=first.text, tool_calls=[call]),
            ToolResultItem(
                call_id=call.id, name=call.name, text="move_to done: at [0.2, 0.3, 0.1]"
            ),
        ]
        second, _ = _final(model, ModelRequest(system=SYSTEM, tools=[MOVE_TO], items=items))
        summary_request = ModelRequest(
            system=[SystemBlock(name="system", text="Summarize the conversation in one line.")],
            items=[
                *items,
                AssistantItem(text=second.text or "(no text)"),
                InstructionItem(text="Summarize what happened in one line."),
            ],
            max_output_tokens=40,
        )
        summary, reported = _final(model, summary_request)
        return ToolSession(first, second, summary, reported, model.streams_tool_requests)
    finally:
        model.close()


def check_tool_session(result: ToolSession, exchanges: list[Exchange]) -> None:
    bodies = bodies_of(exchanges)
    check_tool_choice(bodies)
    check_no_null_content(bodies)
    check_fallbacks(exchanges)
    tool_requests = [b for b in bodies if "tools" in b]
    streamed = [b.get("stream", False) for b in tool_requests]
    # two turns; a turn is asked again with the same messages only when its answer was cut
    # (the resend with more room) or its stream came back empty (asked unstreamed)
    turns = [
        b
        for n, b in enumerate(tool_requests)
        if n == 0 or b["messages"] != tool_requests[n - 1]["messages"]
    ]
    assert len(turns) == 2, streamed
    if result.streams_tool_requests:
        # the server streams tool calls: every tool request streamed, never a fallback
        assert all(streamed), streamed
    else:
        # it sent an empty stream for the first: asked again unstreamed, then never streamed
        assert streamed[0] and not any(streamed[1:]) and len(streamed) >= 3, streamed
    # whatever the model chose: a text, or calls whose arguments are an object, or (text
    # that is no JSON object) kept raw for the error the model reads, never guessed; only
    # the last call of an answer the output limit stopped is cut, and only after a whole one
    for response in (result.first, result.second):
        assert response.tool_calls or response.text.strip()
        for call in response.tool_calls:
            assert isinstance(call.arguments, dict)
            assert call.raw_arguments is None or call.arguments == {}
        cut = [c.cut for c in response.tool_calls]
        assert not any(cut[:-1])
        if cut and cut[-1]:
            assert response.stop_reason == "max_tokens" and len(cut) >= 2
            assert not response.tool_calls[0].cut and response.tool_calls[0].raw_arguments is None
    # the assistant turn went back with its text, "" when it had none (never null), and
    # the server accepted it
    assistant = [m for m in tool_requests[-1]["messages"] if m["role"] == "assistant"]
    assert assistant and assistant[0]["content"] == result.first.text
    assert assistant[0]["tool_calls"]
    # the summary: a text; its usage reported exactly when the stream carried it
    assert result.summary.text.strip()
    carried = reported_usage(chat(exchanges)[-1])
    assert result.summary_usage_reported is bool(carried)
    if carried:
        assert result.summary.usage.prompt_tokens == carried["prompt_tokens"]
    else:
        assert result.summary.usage.prompt_tokens == 0


# =========================================================================== overflow


@dataclass
class Raised:
    """What a call that must fail raised: the expected error, or what happened instead."""

    error: ModelError | None
    instead: str = ""


def _raised(model: OpenAIChatModel, request: ModelRequest, expected: type[ModelError]) -> Raised:
    try:
        list(model.stream(request))
    except expected as exc:
        return Raised(exc)
    except ModelError as exc:
        return Raised(None, f"{type(exc).__name__}: {exc}")
    finally:
        model.close()
    return Raised(None, "the call succeeded")


def overflow(base_url: str) -> Raised:
    """A prompt over the server's window, while the config claims a larger one."""
    model = OpenAIChatModel(model_config(base_url, context_window=32_768))
    request = ModelRequest(
        system=SYSTEM,
        items=[InstructionItem(text="Read this log. " + "joint temps nominal; " * 2500)],
        max_output_tokens=20,
    )
    return _raised(model, request, ContextOverflowError)


def check_overflow(result: Raised, exchanges: list[Exchange]) -> None:
    # the overflow is named, whether the server refused the stream at once (HTTP 400) or
    # sent an empty stream and refused the unstreamed request that followed
    assert isinstance(result.error, ContextOverflowError), result.instead
    streamed = [b.get("stream", False) for b in bodies_of(exchanges)]
    assert streamed in ([True], [True, False]), streamed
    # the server's stated window and its count of the prompt travel on the error
    assert result.error.limit_tokens == N_CTX
    assert result.error.prompt_tokens is not None and result.error.prompt_tokens > N_CTX
    # a refused request cost nothing: no usage is claimed for it
    assert result.error.usage is None


# =========================================================================== empty answer


def empty_answer(base_url: str) -> Raised:
    """A well-formed empty answer (``stop`` cuts the model's first word)."""
    stop = ["Instruction", "say", "Say"]
    model = OpenAIChatModel(
        model_config(
            base_url,
            max_retries=3,
            max_output_tokens=64,
            options={"extra_body": {"stop": stop}},
        )
    )
    request = ModelRequest(system=SYSTEM, items=[InstructionItem(text="Say hello.")])
    return _raised(model, request, EmptyResponseError)


def check_empty_answer(result: Raised, exchanges: list[Exchange]) -> None:
    # an empty final answer is an error, retried once (not max_retries=3 times); a server
    # or model that answered with text anyway took the other path: one request, a text
    bodies = bodies_of(exchanges)
    assert all(b.get("stream") for b in bodies)
    if result.error is not None:
        assert isinstance(result.error, EmptyResponseError)
        assert len(bodies) == 2
    else:
        assert result.instead == "the call succeeded" and len(bodies) == 1


# =========================================================================== vision


@dataclass
class Vision:
    vision: bool | None
    reason: str
    response: ModelResponse


FRAME = encode_frame(np.full((16, 16, 3), 128, dtype=np.uint8), label="front", fmt="png")
"""A 16x16 camera frame (flat grey)."""


def vision(base_url: str) -> Vision:
    """Two turns with a camera frame for a model the table does not know: one probe,
    then the frames stay out and the Brief goes in."""
    model = OpenAIChatModel(model_config(base_url))
    try:
        refreshed = RefreshedBlock(brief=BRIEF, observation="gripper open", images=[FRAME])
        request = ModelRequest(
            system=SYSTEM,
            items=[InstructionItem(text="What is on the table? One line.")],
            refreshed=refreshed,
            max_output_tokens=30,
        )
        response, _ = _final(model, request)
        _final(model, request)  # the verdict is remembered: no second probe
        return Vision(model.vision, model.vision_reason, response)
    finally:
        model.close()


def check_vision(result: Vision, exchanges: list[Exchange]) -> None:
    # one probe (text alone, a flat and a noisy image), verdict remembered
    bodies = bodies_of(exchanges)
    flat, noisy = (url.split(",", 1)[0] for url in probe_images())
    probes, turns = bodies[:3], bodies[3:]
    assert [len(b["messages"][0]["content"]) for b in probes] == [1, 2, 2]
    assert all(b["max_tokens"] == 1 for b in probes)
    assert probes[1]["messages"][0]["content"][1]["image_url"]["url"].startswith(flat)
    assert probes[2]["messages"][0]["content"][1]["image_url"]["url"].startswith(noisy)
    assert result.vision is not None and result.reason.startswith("probed: ")
    assert len(turns) == 2
    for body in turns:
        last = body["messages"][-1]
        if result.vision:
            assert any(p.get("type") == "image_url" for p in last["content"])
        else:  # refused or read as text: no image part at all, the Brief instead
            assert isinstance(last["content"], str)
            assert BRIEF in last["content"] and "not shown" in last["content"]
    assert result.response.text.strip()


# =========================================================================== the example


@dataclass
class ExampleRun:
    code: int
    out: str
    err: str


def run_example(argv: list[str]) -> ExampleRun:
    """``examples/real_provider.py`` with ``argv``, its output captured."""
    module = load_example()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = module.main(argv)
    return ExampleRun(code, out.getvalue(), err.getvalue())


EXAMPLE_INSTRUCTION = "Move the gripper to x=0.2, y=0.3, z=0.1 with move_to, then report."


def example(base_url: str) -> ExampleRun:
    """The example script on a model outside the catalog, given its window."""
    return run_example(
        [
            "--model",
            f"openai:{MODEL}@{base_url}",
            "--context-window",
            str(N_CTX),
            "--max-turns",
            "3",
            "--timeout-s",
            "600",
            EXAMPLE_INSTRUCTION,
        ]
    )


def check_example(result: ExampleRun, exchanges: list[Exchange]) -> None:
    # it runs (whatever a 270M model makes of the task) and ends with a summary
    bodies = bodies_of(exchanges)
    assert result.code in (0, 1), (result.code, result.err)
    assert "Traceback" not in result.err + result.out
    assert "after" in result.out and "turns" in result.out, result.out[-500:]
    probes = [b for b in bodies if b.get("max_tokens") == 1]
    assert len(probes) == 3  # the camera made it probe, once
    turns = [b for b in bodies if b.get("max_tokens") != 1]
    assert turns
    check_tool_choice(turns)
    check_no_null_content(turns)
    for body in turns:
        parts = [m["content"] for m in body["messages"] if isinstance(m["content"], list)]
        assert not any(p.get("type") == "image_url" for c in parts for p in c)


def example_without_a_window(base_url: str) -> ExampleRun:
    return run_example(["--model", f"openai:{MODEL}@{base_url}", "--max-turns", "1"])


def check_example_without_a_window(result: ExampleRun, exchanges: list[Exchange]) -> None:
    assert result.code == 2 and "--context-window" in result.err, result.err
    assert "Traceback" not in result.err and chat(exchanges) == []


# =========================================================================== a whole task


@dataclass
class Task:
    executed: list[tuple[str, dict[str, Any]]]
    events: list[Any]


def task(base_url: str, *, max_output_tokens: int | None = None) -> Task:
    """Three turns of the real loop driving the example's toy gantry (short system prompt:
    the 270M model follows it; the built-in one is too long for it)."""
    from harness import Harness, HarnessConfig

    module = load_example()
    overrides: dict[str, Any] = {"timeout_s": 600.0}
    if max_output_tokens is not None:
        overrides["max_output_tokens"] = max_output_tokens
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None},
            "memory": {"enabled": False},
            "context": {"system_prompt": SYSTEM[0].text},
            "model": model_config(base_url, **overrides).model_dump(exclude_unset=True),
        }
    )
    with contextlib.redirect_stdout(io.StringIO()):
        module.fit_to_window(config, N_CTX)
    if max_output_tokens is not None:
        config.model.max_output_tokens = max_output_tokens
    robot = module.ToyGantry()
    executed: list[tuple[str, dict[str, Any]]] = []
    original = robot.execute

    def execute(action: str, arguments: dict[str, Any]) -> Any:
        executed.append((action, dict(arguments)))
        return original(action, arguments)

    robot.execute = execute  # type: ignore[method-assign]
    with Harness(
        config,
        driver=robot,
        safety=module.BoxEnvelope(),
        physical_tools=module.gantry_tools(robot),
    ) as harness:
        events = list(harness.run_stream(INSTRUCTION, max_turns=3))
    return Task(executed, events)


def check_task(result: Task, exchanges: list[Exchange]) -> None:
    """Whatever the model did in its three turns: one ``done``, last; every request the
    server answered counted; nothing cut or invalid ran; the ending tells the truth."""
    bodies = bodies_of(exchanges)
    events = result.events
    dones = [e for e in events if e.type == "done"]
    assert len(dones) == 1 and events[-1] is dones[0]
    done = dones[0]
    check_usage_counted(done.usage, exchanges)
    turns = [b for b in bodies if b.get("max_tokens") != 1]
    check_tool_choice(turns)
    check_no_null_content(turns)
    check_fallbacks(exchanges)
    # only whole, valid calls of the gantry's tools ran, one per turn at most
    ran = [e for e in events if e.type == "tool_result" and e.executed]
    assert len(result.executed) <= len(ran) <= done.turns
    for action, arguments in result.executed:  # validated, then clamped into the box
        if action == "move_to":
            assert set(arguments) == {"x", "y", "z"}
            assert all(isinstance(v, float) for v in arguments.values())
            assert 0.02 <= arguments["z"] <= 0.5
        else:
            assert action == "grip" and isinstance(arguments["close"], bool)
    for event in events:
        if event.type == "tool_result" and event.error_kind == "output_limit":
            assert not event.executed and "output limit cut" in event.text
    for event in events:
        if event.type == "model_discarded":
            assert event.usage.requests == 1  # what a cut answer cost is never lost
    # a report only from a whole answer; a failure names its reason
    assert done.status in ("completed", "max_turns", "failed"), done.status
    if done.status == "completed":
        answers = [e for e in events if e.type == "model_response"]
        assert answers and not answers[-1].tool_calls
        assert answers[-1].stop_reason not in ("max_tokens", "length")
        assert done.report == answers[-1].text
    if done.status == "failed":
        assert "limit" in done.termination_reason or "model error" in done.termination_reason


def cut_call(base_url: str) -> Task:
    """The gantry task with the output limit at 48 tokens (a user's choice, kept): the
    model's calls are cut more often than not."""
    return task(base_url, max_output_tokens=48)


def check_cut_call(result: Task, exchanges: list[Exchange]) -> None:
    check_task(result, exchanges)
    done = result.events[-1]
    for body in bodies_of(exchanges):
        if body.get("max_tokens") != 1:
            assert body["max_tokens"] == 48  # a limit the user set is kept
    cuts = [e for e in result.events if e.type == "model_discarded"]
    for cut in cuts:
        assert "the output limit of 48 tokens cut" in cut.reason
        for call in cut.tool_calls:
            assert call["name"] and "arguments_so_far" in call
    # a cut answer is always resent (changed) once: a task that fails over cuts saw two,
    # each named with the limit that cut it (the window has room for 48 more tokens)
    if done.status == "failed" and "cut" in done.termination_reason:
        assert "the output limit of 48 tokens cut" in done.termination_reason
        assert "leaves room for only" not in done.termination_reason
        assert len(cuts) == 2
    resent = [b for b in bodies_of(exchanges) if b.get("max_tokens") == 48]
    assert len(resent) >= min(len(cuts) + 1, 2) or done.status == "cancelled"


@dataclass
class SmallWindow:
    offered: list[str]
    left_out: dict[str, list[str]]
    refusal: str | None
    server_counted: bool
    tools_tokens: int


def small_window(base_url: str) -> SmallWindow:
    """The default tabletop deployment on this server's 8k window: which tools it gets."""
    import argparse
    from pathlib import Path

    from harness.cli.common import config_from_args
    from harness.runtime.harness import Harness
    from harness.store import MemoryRunStore

    args = argparse.Namespace(
        config=str(Path(__file__).resolve().parents[1] / "configs" / "default.yaml"),
        set=["memory.enabled=false"],
        model=f"openai:{MODEL}@{base_url}",
        context_window=N_CTX,
    )
    config = config_from_args(args)
    with Harness.from_config(config, store=MemoryRunStore()) as harness:
        offer = harness.tool_offer()
        context = harness.session.context
        return SmallWindow(
            offered=[t.name for t in offer.offered],
            left_out=offer.left_out,
            refusal=offer.refusal,
            server_counted=context.estimator.server_counted,
            tools_tokens=context.estimator.calibrated(context.tools_tokens()),
        )


def check_small_window(result: SmallWindow, exchanges: list[Exchange]) -> None:
    # a smaller tool set, not a refusal; optional features only; no model call for it
    assert result.refusal is None
    assert result.left_out and set(result.left_out) <= {
        "sub-agents",
        "episodes",
        "archive search",
        "scene queries",
    }
    for core in ("move_to", "pick", "place", "update_task_notes", "recall"):
        assert core in result.offered
    assert chat(exchanges) == []
    # the server's own count calibrated the estimate where the server counts
    counted = [e for e in exchanges if e.path == "/tokenize" and e.status == 200]
    assert result.server_counted is bool(counted)


SCENARIOS = {
    "small_window": (small_window, check_small_window),
    "cut_call": (cut_call, check_cut_call),
    "tool_session": (tool_session, check_tool_session),
    "overflow": (overflow, check_overflow),
    "empty_answer": (empty_answer, check_empty_answer),
    "vision": (vision, check_vision),
    "task": (task, check_task),
    "example": (example, check_example),
    "example_without_a_window": (example_without_a_window, check_example_without_a_window),
}
"""name -> (run against a base_url, check the result and the request bodies)."""


# =========================================================================== facts


@dataclass
class Fact:
    name: str
    body: dict[str, Any]
    stream: bool = False


_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "move_to", "arguments": '{"x": 0.2, "y": 0.3, "z": 0.1}'},
}
_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": MOVE_TO.name,
            "description": MOVE_TO.description,
            "parameters": MOVE_TO.parameters,
        },
    }
]
_MESSAGES = [
    {"role": "system", "content": SYSTEM[0].text},
    {"role": "user", "content": INSTRUCTION},
]


def _tool_turn(content: str | None) -> list[dict[str, Any]]:
    return [
        *_MESSAGES,
        {"role": "assistant", "content": content, "tool_calls": [_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "moved"},
    ]


def _image_message(with_image: bool) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "text", "text": BRIEF}]
    if with_image:
        content.append({"type": "image_url", "image_url": {"url": probe_images()[1]}})
    return [{"role": "user", "content": content}]


FACTS = [
    Fact("content_null", {"messages": _tool_turn(None), "tools": _TOOLS, "tool_choice": "auto"}),
    Fact("content_empty", {"messages": _tool_turn(""), "tools": _TOOLS, "tool_choice": "auto"}),
    Fact("tools_without_tool_choice", {"messages": _MESSAGES, "tools": _TOOLS}),
    Fact("tools_with_tool_choice", {"messages": _MESSAGES, "tools": _TOOLS, "tool_choice": "auto"}),
    Fact(
        "streamed_tool_choice",
        {"messages": _MESSAGES, "tools": _TOOLS, "tool_choice": "auto", "stream": True},
        stream=True,
    ),
    Fact(
        "streamed_overflow",
        {"messages": [{"role": "user", "content": "word " * 9000}], "stream": True},
        stream=True,
    ),
    Fact("overflow", {"messages": [{"role": "user", "content": "word " * 9000}]}),
    Fact(
        "stream_usage",
        {
            "messages": [{"role": "user", "content": "Say hello."}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        stream=True,
    ),
    Fact("brief_alone", {"messages": _image_message(False)}),
    Fact("brief_with_image", {"messages": _image_message(True)}),
]


def facts(base_url: str) -> list[tuple[int, str, str]]:
    """Send every fact's request; (status, content type, body) for each."""
    answers = []
    for fact in FACTS:
        body = {"model": MODEL, "max_tokens": 40, **fact.body}
        request = urllib.request.Request(
            base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                answers.append(
                    (response.status, response.headers["content-type"], response.read().decode())
                )
        except urllib.error.HTTPError as error:
            answers.append((error.code, error.headers["content-type"], error.read().decode()))
    return answers


@dataclass
class FactView:
    """The recorded (or live) answers by fact name."""

    by_name: dict[str, Exchange] = field(default_factory=dict)

    def json(self, name: str) -> Any:
        return self.by_name[name].json()

    def prompt_tokens(self, name: str) -> int:
        return int(self.json(name)["usage"]["prompt_tokens"])


def check_facts(exchanges: list[Exchange]) -> FactView:
    """What every compliant server does with the plain requests (module docstring); the
    rest of each answer is kept in the view for the record."""
    view = FactView({fact.name: exchange for fact, exchange in zip(FACTS, exchanges, strict=True)})
    # "" for an assistant turn without text is accepted ("content": null may or may not be)
    assert view.by_name["content_empty"].status == 200
    assert view.by_name["content_null"].status in (200, 400, 422, 500)
    assert view.json("tools_with_tool_choice")["choices"][0]["message"]
    # a prompt over the window is refused with a 400 naming the window, streamed or not
    # (a streamed one may instead come back as an empty stream)
    stated = view.json("overflow")["error"]
    assert view.by_name["overflow"].status == 400
    assert str(N_CTX) in json.dumps(stated)
    streamed = view.by_name["streamed_overflow"]
    assert streamed.status == 400 or (streamed.status == 200 and not streamed.body.strip())
    assert view.by_name["stream_usage"].status == 200
    # an image part is refused or read, never ignored silently with a 200 and no cost
    with_image = view.by_name["brief_with_image"]
    assert with_image.status != 200 or view.prompt_tokens("brief_with_image") > view.prompt_tokens(
        "brief_alone"
    )
    return view

"""What the harness must get right against llama.cpp's OpenAI-compatible server, as scenarios.

Each scenario takes a ``base_url`` and runs against whatever answers there: the real
server (``tests/real/``, and once through a recording proxy to write the transcripts under
``tests/fixtures/llamacpp/``), or the loopback wire server replaying those transcripts
(``tests/test_llamacpp_replay.py``). Each has a ``check_*`` function that both use, given
the scenario's result and the request bodies the server received, so the replayed and the
live runs are held to the same assertions.

``facts`` is different: plain HTTP requests that pin down the server's behaviour the
adapter depends on (it rejects ``"content": null``; without ``tool_choice`` the tools are
not in the prompt; streamed tool requests and streamed overflows come back as empty 200
streams; streams carry no usage; an image part is read as text). If a new server version
changes any of these, ``check_facts`` fails on the live run and says which.
"""

from __future__ import annotations

import contextlib
import io
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
    them: the first turn finds out the server cannot stream tool requests, the second
    sends the first's tool call back (an assistant turn without text)."""
    model = OpenAIChatModel(model_config(base_url))
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


def check_tool_session(result: ToolSession, bodies: list[dict[str, Any]]) -> None:
    # item 2: tools go out with tool_choice auto; the streamed try came back empty, the
    # unstreamed one called the tool, and tool requests are no longer streamed
    shape = [(b.get("stream", False), "tools" in b, b.get("tool_choice")) for b in bodies]
    assert shape == [
        (True, True, "auto"),
        (False, True, "auto"),
        (False, True, "auto"),
        (True, False, None),
    ], shape
    assert result.streams_tool_requests is False
    assert [c.name for c in result.first.tool_calls] == ["move_to"]
    assert set(result.first.tool_calls[0].arguments) == {"x", "y", "z"}
    # item 1: the assistant tool-call turn went back with "" and the server accepted it
    for body in bodies:
        assert all(m.get("content") is not None for m in body["messages"]), body
    assistant = [m for m in bodies[2]["messages"] if m["role"] == "assistant"]
    assert assistant and assistant[0]["content"] == "" and assistant[0]["tool_calls"]
    assert result.second.tool_calls or result.second.text.strip()
    # item 6: the stream carried no usage, and the adapter says so
    assert result.summary.text.strip()
    assert result.summary_usage_reported is False
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


def check_overflow(result: Raised, bodies: list[dict[str, Any]]) -> None:
    # item 3: the streamed overflow (an empty stream) is recognised, by asking unstreamed
    assert isinstance(result.error, ContextOverflowError), result.instead
    assert [b.get("stream", False) for b in bodies] == [True, False]
    # item 4: the server's stated window travels on the error
    assert result.error.limit_tokens == N_CTX
    assert result.error.prompt_tokens is not None and result.error.prompt_tokens > N_CTX


# =========================================================================== empty answer


def empty_answer(base_url: str) -> Raised:
    """A well-formed empty answer (``stop`` cuts the model's first word)."""
    stop = ["Instruction", "say", "Say"]
    model = OpenAIChatModel(
        model_config(base_url, max_retries=3, options={"extra_body": {"stop": stop}})
    )
    request = ModelRequest(system=SYSTEM, items=[InstructionItem(text="Say hello.")])
    return _raised(model, request, EmptyResponseError)


def check_empty_answer(result: Raised, bodies: list[dict[str, Any]]) -> None:
    # item 3: an empty final answer is an error, retried once (not max_retries=3 times)
    assert isinstance(result.error, EmptyResponseError), result.instead
    assert len(bodies) == 2 and all(b.get("stream") for b in bodies)


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


def check_vision(result: Vision, bodies: list[dict[str, Any]]) -> None:
    # item 5: one probe (text alone, a flat and a noisy image), verdict remembered
    flat, noisy = (url.split(",", 1)[0] for url in probe_images())
    probes, turns = bodies[:3], bodies[3:]
    assert [len(b["messages"][0]["content"]) for b in probes] == [1, 2, 2]
    assert all(b["max_tokens"] == 1 for b in probes)
    assert probes[1]["messages"][0]["content"][1]["image_url"]["url"].startswith(flat)
    assert probes[2]["messages"][0]["content"][1]["image_url"]["url"].startswith(noisy)
    assert result.vision is False and "read as text" in result.reason, result.reason
    assert len(turns) == 2
    for body in turns:
        last = body["messages"][-1]
        assert isinstance(last["content"], str)  # no image part at all
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


def check_example(result: ExampleRun, bodies: list[dict[str, Any]]) -> None:
    # item 7: it runs (whatever a 270M model makes of the task) and ends with a summary
    assert result.code in (0, 1), (result.code, result.err)
    assert "Traceback" not in result.err + result.out
    assert "after" in result.out and "turns" in result.out, result.out[-500:]
    probes = [b for b in bodies if b.get("max_tokens") == 1]
    assert len(probes) == 3  # the camera made it probe, once
    turns = [b for b in bodies if b.get("max_tokens") != 1]
    assert turns and all(b.get("tool_choice") == "auto" for b in turns if "tools" in b)
    for body in turns:
        assert all(m.get("content") is not None for m in body["messages"])
        parts = [m["content"] for m in body["messages"] if isinstance(m["content"], list)]
        assert not any(p.get("type") == "image_url" for c in parts for p in c)


def example_without_a_window(base_url: str) -> ExampleRun:
    return run_example(["--model", f"openai:{MODEL}@{base_url}", "--max-turns", "1"])


def check_example_without_a_window(result: ExampleRun, bodies: list[dict[str, Any]]) -> None:
    assert result.code == 2 and "--context-window" in result.err, result.err
    assert "Traceback" not in result.err and bodies == []


# =========================================================================== a whole task


@dataclass
class Task:
    executed: list[tuple[str, dict[str, Any]]]
    events: list[Any]


def task(base_url: str) -> Task:
    """Three turns of the real loop driving the example's toy gantry (short system prompt:
    the 270M model follows it; the built-in one is too long for it)."""
    from harness import Harness, HarnessConfig

    module = load_example()
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None},
            "memory": {"enabled": False},
            "context": {"system_prompt": SYSTEM[0].text},
            "model": model_config(base_url, timeout_s=600.0).model_dump(),
        }
    )
    with contextlib.redirect_stdout(io.StringIO()):
        module.fit_to_window(config, N_CTX)
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


def check_task(result: Task, bodies: list[dict[str, Any]]) -> None:
    # items 1 and 2 through the loop: tool calls at turn 1 and after, history accepted
    kinds = [e.type for e in result.events]
    assert "model_error" not in kinds, [e for e in result.events if e.type == "model_error"]
    assert len(result.executed) >= 2 and all(a == "move_to" for a, _ in result.executed)
    turns = [b for b in bodies if b.get("max_tokens") != 1]
    assert turns[0].get("stream") and not any(b.get("stream") for b in turns[1:])
    assert all(b.get("tool_choice") == "auto" for b in turns)
    later = [m for b in turns[2:] for m in b["messages"] if m["role"] == "assistant"]
    assert later and all(m["content"] == "" and m["tool_calls"] for m in later)
    done = result.events[-1]
    assert done.type == "done" and done.status in ("completed", "max_turns")


SCENARIOS = {
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
    """The server behaviour the adapter is built around (module docstring)."""
    view = FactView({fact.name: exchange for fact, exchange in zip(FACTS, exchanges, strict=True)})
    null = view.by_name["content_null"]
    assert null.status == 500 and "validation error" in null.body, null.body[:300]
    assert view.by_name["content_empty"].status == 200
    without = view.json("tools_without_tool_choice")["choices"][0]["message"]
    assert not without.get("tool_calls")
    # without tool_choice the tools never reach the prompt: it is much shorter
    assert view.prompt_tokens("tools_with_tool_choice") > 2 * view.prompt_tokens(
        "tools_without_tool_choice"
    )
    assert view.json("tools_with_tool_choice")["choices"][0]["message"]["tool_calls"]
    for name in ("streamed_tool_choice", "streamed_overflow"):
        exchange = view.by_name[name]
        assert exchange.status == 200 and exchange.body.strip() == "", (name, exchange.body)
    stated = view.json("overflow")["error"]
    assert view.by_name["overflow"].status == 400
    assert stated["code"] == "context_length_exceeded"
    assert f"maximum context length is {N_CTX} tokens" in stated["message"]
    chunks = [json.loads(d) for d in view.by_name["stream_usage"].sse_data() if d != "[DONE]"]
    assert chunks and not any(chunk.get("usage") for chunk in chunks)
    # an image part is read as text: a noisy 16-pixel image costs hundreds of tokens
    assert view.prompt_tokens("brief_with_image") - view.prompt_tokens("brief_alone") > 300
    return view

"""``model.vision``: known models, the probe for unknown ones, and what is sent either way.

The decision rule is attacked with simulated servers of every kind (the oracle is the kind
of server simulated, not the rule): a vision encoder that costs a fixed number of tokens
per image, a text-only chat format that reads the data URL at 1 to 8 characters a token,
one that drops the image or the whole message, one that rejects images, one that reports
no usage. Then the adapter is run against such servers on the wire.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import load_config
from harness.errors import ConfigError
from harness.messages import ImagePart, InstructionItem, ModelRequest, RefreshedBlock, SystemBlock
from harness.providers.catalog import known_vision
from harness.providers.openai import OpenAIChatModel
from harness.providers.vision import ProbeAnswer, judge, probe_images
from tests.dialects import OPENAI
from tests.tiers import examples
from tests.wire_server import Recorded, Reply, WireServer, openai_completion, openai_error
from tests.wire_server import openai_usage as usage

FLAT, NOISY = probe_images()
IMAGE = ImagePart(data=b"\x89PNG" + bytes(range(100)), width=64, height=48, label="front")


def image_urls(body: dict[str, Any]) -> list[str]:
    return [
        part["image_url"]["url"]
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def text_length(body: dict[str, Any]) -> int:
    total = 0
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        else:
            total += sum(len(p.get("text", "")) for p in content)
    return total


# --------------------------------------------------------------------------- simulated servers


Server = Callable[[dict[str, Any]], ProbeAnswer]


def vision_server(per_image: int) -> Server:
    def answer(body: dict[str, Any]) -> ProbeAnswer:
        return ProbeAnswer(text_length(body) // 4 + 10 + per_image * len(image_urls(body)))

    return answer


def text_reader(chars_per_token: float, window: int) -> Server:
    def answer(body: dict[str, Any]) -> ProbeAnswer:
        tokens = (text_length(body) + sum(len(u) for u in image_urls(body))) / chars_per_token
        if tokens + 10 > window:
            return ProbeAnswer(overflow=True)
        return ProbeAnswer(int(tokens) + 10)

    return answer


def dropper(whole_message: bool) -> Server:
    def answer(body: dict[str, Any]) -> ProbeAnswer:
        if image_urls(body) and whole_message:
            return ProbeAnswer(10)  # the message (and its text) is gone
        return ProbeAnswer(text_length(body) // 4 + 10)

    return answer


def probe_bodies() -> list[dict[str, Any]]:
    def body(url: str | None) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": "probe text"}]
        if url:
            content.append({"type": "image_url", "image_url": {"url": url}})
        return {"messages": [{"role": "user", "content": content}]}

    return [body(None), body(FLAT), body(NOISY)]


kinds = st.one_of(
    st.tuples(st.just("vision"), st.integers(1, 3000).map(vision_server)),
    st.tuples(
        st.just("text"),
        st.builds(text_reader, st.floats(1.0, 8.0), st.integers(300, 200_000)),
    ),
    st.tuples(st.just("dropped"), st.booleans().map(dropper)),
)


@settings(max_examples=examples(400), deadline=None)
@given(kind=kinds)
def test_the_probe_tells_every_kind_of_server_apart(kind: tuple[str, Server]) -> None:
    name, server = kind
    verdict = judge(*(server(body) for body in probe_bodies()))
    assert verdict.vision == (name == "vision"), (name, verdict)
    assert verdict.decided


def test_rejections_overflows_and_missing_usage_mean_no_images() -> None:
    alone = ProbeAnswer(40)
    rejected = judge(alone, ProbeAnswer(rejected="HTTP 400: image input not supported"), alone)
    assert not rejected.vision and "rejects image input" in rejected.reason
    assert not judge(alone, ProbeAnswer(90), ProbeAnswer(overflow=True)).vision
    unknown = judge(ProbeAnswer(None), ProbeAnswer(None), ProbeAnswer(None))
    assert not unknown.vision and not unknown.decided and "model.vision" in unknown.reason


def test_probe_images_are_tiny_deterministic_and_differ_only_in_encoding() -> None:
    assert probe_images() == (FLAT, NOISY)
    assert FLAT.startswith("data:image/png;base64,") and NOISY.startswith("data:image/png;")
    assert len(NOISY) > 5 * len(FLAT)


# --------------------------------------------------------------------------- catalog and config


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gpt-4o-mini", True),
        ("o3-mini", False),
        ("claude-sonnet-4-6", True),
        ("Qwen/Qwen2.5-VL-7B-Instruct", True),
        ("qwen2.5:7b", False),
        ("gemma3:27b", True),
        ("gemma-3-270m-it", False),
        ("gemma3:1b", False),
        ("llama3.2-vision:11b", True),
        ("my-finetune", None),
    ],
)
def test_known_vision(name: str, expected: bool | None) -> None:
    assert known_vision(name) is expected


def test_model_vision_config(tmp_path: Path) -> None:
    assert load_config(overrides=["model.vision=false"]).model.vision is False
    assert load_config(overrides=["model.vision=auto"]).model.vision == "auto"
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=["model.vision=sometimes"])
    assert "model.vision" in str(caught.value) and "sometimes" in str(caught.value)


# --------------------------------------------------------------------------- on the wire


def request() -> ModelRequest:
    return ModelRequest(
        system=[SystemBlock(name="system", text="You drive a robot.")],
        items=[InstructionItem(text="look")],
        refreshed=RefreshedBlock(brief="Scene: red_cube_1 left of tray_1", images=[IMAGE]),
    )


def model(server: WireServer, **overrides: Any) -> OpenAIChatModel:
    config = OPENAI.config(server, **{"name": "local-model", "context_window": 8192, **overrides})
    return OpenAIChatModel(config, rng=random.Random(0))


def answering(server: Server) -> Callable[[Recorded], Reply]:
    """A wire responder: probes get the simulated usage, the real request an answer."""

    def respond(recorded: Recorded) -> Reply:
        body = recorded.body
        if body.get("max_tokens") == 1:
            answer = server(body)
            if answer.overflow:
                return openai_error(400, "maximum context length is 300 tokens", code=None)
            return openai_completion("x", usage=usage(answer.prompt_tokens or 0, 1))
        return openai_completion("I see the cube.")

    return respond


@pytest.mark.parametrize(
    ("label", "simulated", "sees"),
    [
        ("vision encoder", vision_server(256), True),
        ("text-only chat format", text_reader(1.4, 100_000), False),
        ("drops the message", dropper(True), False),
    ],
)
def test_an_unknown_model_is_probed_once_and_the_verdict_decides_what_is_sent(
    server: WireServer, label: str, simulated: Server, sees: bool
) -> None:
    server.responder = answering(simulated)
    adapter = model(server, stream=False)
    for _ in range(2):
        list(adapter.stream(request()))
    bodies = [r.body for r in server.requests]
    assert [b.get("max_tokens") for b in bodies[:3]] == [1, 1, 1] and len(bodies) == 5
    assert adapter.vision is sees and adapter.vision_reason.startswith("probed: ")
    for body in bodies[3:]:
        last = body["messages"][-1]["content"]
        if sees:
            assert len(image_urls(body)) == 1 and last[0]["text"].startswith("Scene: red_cube_1")
        else:
            assert image_urls(body) == [] and isinstance(last, str)
            assert last.startswith("Scene: red_cube_1") and "not shown" in last


def test_a_server_that_rejects_images_is_not_sent_any(server: WireServer) -> None:
    def respond(recorded: Recorded) -> Reply:
        if image_urls(recorded.body):
            return openai_error(400, "This model does not support image input")
        return openai_completion("ok", usage=usage(30, 1))

    server.responder = respond
    adapter = model(server, stream=False)
    list(adapter.stream(request()))
    assert adapter.vision is False and "rejects image input" in adapter.vision_reason
    assert image_urls(server.requests[-1].body) == []


def test_configured_or_known_vision_is_never_probed(server: WireServer) -> None:
    server.responder = lambda recorded: openai_completion("ok")
    for overrides, sends in (
        ({"vision": True}, True),
        ({"vision": False}, False),
        ({"name": "qwen2.5-vl-7b"}, True),
        ({"name": "qwen2.5:7b"}, False),
    ):
        server.requests.clear()
        list(model(server, stream=False, **overrides).stream(request()))
        assert len(server.requests) == 1, overrides
        assert bool(image_urls(server.requests[0].body)) is sends, overrides


def test_a_probe_that_cannot_reach_the_server_decides_nothing(server: WireServer) -> None:
    """A failed text-only probe is the call's failure (retried); no verdict is kept."""
    server.reply(Reply(drop=True), *[openai_completion("x", usage=usage(30, 1))] * 3)
    server.reply(openai_completion("fine"))
    adapter = model(server, stream=False)
    chunks = list(adapter.stream(request()))
    assert chunks[0].__class__.__name__ == "RetryNotice"
    assert adapter.vision is False and len(server.requests) == 5


@pytest.mark.parametrize(("vision", "counted"), [(None, True), (True, True), (False, False)])
def test_frames_a_model_cannot_see_are_not_charged_to_the_budget(
    vision: bool | None, counted: bool
) -> None:
    """A text-only model gets a caption instead of the frame, so the frame's image tokens
    must not push the request toward compaction."""
    from harness import Harness, HarnessConfig
    from harness.events import PromptSnapshotEvent
    from harness.providers import ScriptedModel, reply
    from tests.conftest import fake_robot

    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    model = ScriptedModel([reply("done")])
    model.vision = vision  # type: ignore[attr-defined]
    with Harness(config, model=model, driver=fake_robot()) as harness:
        events = list(harness.run_stream("look around"))
    (snapshot,) = [e for e in events if isinstance(e, PromptSnapshotEvent)]
    assert (snapshot.sections["images"] > 0) is counted
    assert snapshot.images == 1  # the frame still reaches the adapter, which captions it


def _harness_over(server: WireServer, adapter: OpenAIChatModel) -> Any:
    from harness import Harness, HarnessConfig
    from tests.conftest import fake_robot

    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    return Harness(config, model=adapter, driver=fake_robot())


def test_frames_are_priced_after_the_probe_decides_never_before(server: WireServer) -> None:
    """Issue 26 item 10: an unknown text-only model is probed before the first request is
    priced, so its frames (captioned, never sent) are never charged to the budget."""
    from harness.events import PromptSnapshotEvent

    server.responder = answering(text_reader(1.4, 100_000))
    adapter = model(server, stream=False)
    assert adapter.vision is None
    with _harness_over(server, adapter) as harness:
        events = list(harness.run_stream("look around"))
    assert adapter.vision is False
    (snapshot,) = [e for e in events if isinstance(e, PromptSnapshotEvent)]
    assert snapshot.sections["images"] == 0 and snapshot.images == 1
    decision = server.requests[-1].body
    assert decision.get("max_tokens") != 1 and image_urls(decision) == []


def test_the_probe_sends_none_of_the_configured_extra_body(server: WireServer) -> None:
    """``model.options.extra_body`` is for the deployment's requests (here a tool_choice
    that needs tools); the probe's three requests carry none of it."""
    server.responder = answering(vision_server(256))
    adapter = model(
        server,
        stream=False,
        options={"extra_body": {"tool_choice": "required", "top_k": 5}},
    )
    list(adapter.stream(request()))
    probes = [r.body for r in server.requests if r.body.get("max_tokens") == 1]
    decision = server.requests[-1].body
    assert len(probes) == 3
    assert all("tool_choice" not in b and "top_k" not in b for b in probes), probes
    assert decision["tool_choice"] == "required" and decision["top_k"] == 5

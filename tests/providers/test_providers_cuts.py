"""A response cut off at any byte is either the whole answer or an error, never a part of it.

The attack: take a real-shaped stream holding text and a tool call, cut its body at a byte
position (the server then closes the connection cleanly, as a crashed server or a proxy
that gave up would), and look at what the adapter hands over. The oracle does not use the
adapter's code: it finds the terminal marker in the raw bytes (the OpenAI chunk carrying
``finish_reason``, Anthropic's ``message_stop`` event) and says

- cut before the marker's frame begins: the call must fail with ``incomplete_response``;
- cut after the marker's frame ends: the call must give the whole answer, exactly;
- cut inside the marker's frame: either of the two, nothing else.

Every frame boundary (and the bytes either side of it) is tried for both wire formats,
plus random positions from hypothesis; ``HARNESS_EXHAUSTIVE_CUTS=1`` tries every byte.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import IncompleteResponseError
from harness.messages import InstructionItem, ModelRequest, ModelResponse, SystemBlock, ToolSpec
from harness.providers import build_model
from harness.providers.base import Final, RetryNotice
from tests.dialects import OPENAI, Dialect
from tests.tiers import examples
from tests.wire_server import (
    Reply,
    WireServer,
    anthropic_stream,
    empty_body,
    openai_stream,
    sse_bytes,
    text_block,
    tool_use_block,
)

PICK = ToolSpec(
    name="pick",
    description="Pick up an object.",
    parameters={"type": "object", "properties": {"ref": {"type": "string"}}},
)
REQUEST = ModelRequest(
    system=[SystemBlock(name="system", text="You drive a robot.")],
    tools=[PICK],
    items=[InstructionItem(text="pick the red cube")],
)
ARGUMENTS = {"ref": "red_cube_1", "grip": "gentle"}


@dataclass
class Tally:
    tries: int = 0
    whole: int = 0
    incomplete: int = 0
    failures: list[str] = field(default_factory=list)


def full_stream(dialect: Dialect) -> tuple[bytes, int, int]:
    """(the whole body, where the terminal marker's frame starts, where it ends)."""
    if dialect is OPENAI:
        reply = openai_stream("I will pick it.", tool_calls=[("call_1", "pick", ARGUMENTS)])
        marker = '"finish_reason": "tool_calls"'
    else:
        blocks = [text_block("I will pick it."), tool_use_block("toolu_1", "pick", ARGUMENTS)]
        reply = anthropic_stream(blocks)
        marker = "event: message_stop"
    assert reply.events is not None
    body = sse_bytes(reply.events)
    at = body.index(marker.encode())
    start = body.rfind(b"\n\n", 0, at) + 2
    end = body.index(b"\n\n", at) + 2
    return body, start, end


def try_cut(server: WireServer, model: object, body: bytes, cut: int, tally: Tally) -> None:
    """One try; records a failure when the adapter's answer breaks the oracle."""
    _, start, end = CUTS[id(body)]
    cut_off = Reply(raw=body[:cut], headers={"Content-Type": "text/event-stream"})
    # An empty stream is asked again unstreamed (OpenAI); that answer is cut off too.
    server.responder = lambda recorded: cut_off if recorded.body.get("stream") else empty_body()
    tally.tries += 1
    final: ModelResponse | None = None
    try:
        for chunk in model.stream(REQUEST):  # type: ignore[attr-defined]
            if isinstance(chunk, Final):
                final = chunk.response
    except IncompleteResponseError:
        tally.incomplete += 1
        if cut >= end:
            tally.failures.append(f"cut {cut}: whole answer reported incomplete")
        return
    tally.whole += 1
    if cut < start:
        tally.failures.append(f"cut {cut}: a part of the answer was handed over: {final}")
    elif final is None or [(c.name, c.arguments) for c in final.tool_calls] != [
        ("pick", ARGUMENTS)
    ]:
        tally.failures.append(f"cut {cut}: the answer differs from the whole one: {final}")


CUTS: dict[int, tuple[bytes, int, int]] = {}


def _positions(body: bytes, start: int, end: int) -> list[int]:
    if os.environ.get("HARNESS_EXHAUSTIVE_CUTS"):
        return list(range(len(body) + 1))
    boundaries = [i + 2 for i in range(len(body)) if body[i : i + 2] == b"\n\n"]
    around = {p + d for p in [0, *boundaries, start, end] for d in (-1, 0, 1)}
    return sorted(p for p in around if 0 <= p <= len(body))


def test_every_frame_boundary(dialect: Dialect, server: WireServer) -> None:
    body, start, end = full_stream(dialect)
    CUTS[id(body)] = (body, start, end)
    model = build_model(dialect.config(server, max_retries=0))
    tally = Tally()
    for cut in _positions(body, start, end):
        try_cut(server, model, body, cut, tally)
    print(
        f"\ncuts [{dialect.name}]: {tally.tries} tries over a {len(body)}-byte body, "
        f"{tally.whole} whole, {tally.incomplete} incomplete, {len(tally.failures)} failures"
    )
    assert not tally.failures, tally.failures[:5]
    assert tally.incomplete and tally.whole


def test_random_cut_positions(dialect: Dialect, server: WireServer) -> None:
    body, start, end = full_stream(dialect)
    CUTS[id(body)] = (body, start, end)
    model = build_model(dialect.config(server, max_retries=0))
    tally = Tally()

    @settings(
        max_examples=examples(60),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(cut=st.integers(min_value=0, max_value=len(body)))
    def one(cut: int) -> None:
        try_cut(server, model, body, cut, tally)

    one()
    print(
        f"\nrandom cuts [{dialect.name}]: {tally.tries} tries, {tally.whole} whole, "
        f"{tally.incomplete} incomplete, {len(tally.failures)} failures"
    )
    assert not tally.failures, tally.failures[:5]


def test_a_cut_answer_is_retried_and_only_the_whole_one_is_used(
    dialect: Dialect, server: WireServer
) -> None:
    body, start, _ = full_stream(dialect)
    server.reply(
        Reply(raw=body[: start // 2], headers={"Content-Type": "text/event-stream"}),
        Reply(raw=body, headers={"Content-Type": "text/event-stream"}),
    )
    chunks = list(build_model(dialect.config(server)).stream(REQUEST))
    notices = [c for c in chunks if isinstance(c, RetryNotice)]
    assert [n.error_kind for n in notices] == ["incomplete_response"]
    assert "discarded" in notices[0].message  # the deltas streamed so far do not count
    final = chunks[-1]
    assert isinstance(final, Final)
    assert [(c.name, c.arguments) for c in final.response.tool_calls] == [("pick", ARGUMENTS)]

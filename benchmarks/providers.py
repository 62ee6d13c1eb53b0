"""What the provider adapters add on top of the official SDKs.

Run: ``python benchmarks/providers.py``. Everything runs against the local wire-format
server (``tests/wire_server.py``) on 127.0.0.1, so the numbers are the adapters' own cost,
not a provider's latency. Prints one table (median of repeats):

- building the wire payload from a provider-neutral request, by history length (the
  per-turn translation cost, paid before every model call);
- consuming a streamed response of 1000 chunks through the adapter (deltas, assembly,
  cancellation polls, retry wrapper) against iterating the same stream with the bare SDK,
  side by side with their ratio.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.wire_server

from harness.config import ModelConfig
from harness.messages import (
    AssistantItem,
    InstructionItem,
    Item,
    ModelRequest,
    RefreshedBlock,
    SystemBlock,
    ToolCall,
    ToolResultItem,
    ToolSpec,
)
from harness.providers.anthropic import AnthropicModel
from harness.providers.base import Final
from harness.providers.openai import OpenAIChatModel
from tests.wire_server import (
    WireServer,
    anthropic_stream,
    openai_stream,
    text_block,
)

REPEATS = 15
KEY_ENV = "HARNESS_BENCH_KEY"
TEXT = "x" * 5000  # 1000 chunks of 5 characters


def median_ms(action: Callable[[], object]) -> float:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def history(turns: int) -> list[Item]:
    items: list[Item] = [InstructionItem(text="put every cube in the tray")]
    for turn in range(turns):
        call = ToolCall(id=f"call_{turn}", name="pick", arguments={"ref": f"cube_{turn}"})
        items.append(AssistantItem(text="Next cube.", tool_calls=[call]))
        items.append(ToolResultItem(call_id=call.id, name="pick", text="picked " + "y" * 400))
    return items


def request(turns: int) -> ModelRequest:
    return ModelRequest(
        system=[SystemBlock(name="system", text="You drive a robot. " * 100)],
        tools=[
            ToolSpec(name=f"tool_{n}", description="d" * 200, parameters={"type": "object"})
            for n in range(12)
        ],
        items=history(turns),
        refreshed=RefreshedBlock(brief="Scene: " + "z" * 2000),
        stable_items=2 * turns,
    )


def main() -> None:
    os.environ.setdefault(KEY_ENV, "bench-key-0123456789")
    with WireServer() as server:
        openai = OpenAIChatModel(
            ModelConfig(
                provider="openai", name="bench", base_url=server.openai_url, context_window=200_000
            )
        )
        anthropic = AnthropicModel(
            ModelConfig(
                provider="anthropic",
                name="claude-sonnet-4-6",
                base_url=server.anthropic_url,
                api_key_env=KEY_ENV,
            )
        )
        print("build the wire payload (per model call)")
        print(f"  {'history items':>13}  {'openai':>10}  {'anthropic':>10}")
        for turns in (5, 50, 200):
            req = request(turns)
            first = median_ms(lambda r=req: openai.build_payload(r))
            second = median_ms(lambda r=req: anthropic.build_payload(r))
            print(f"  {2 * turns + 1:>13}  {first:>7.2f} ms  {second:>7.2f} ms")

        small = request(1)
        print("consume a 1000-chunk stream from 127.0.0.1")
        print(f"  {'provider':<10}  {'SDK alone':>10}  {'adapter':>10}  ratio")
        cases = (
            ("openai", openai, lambda: openai_stream(TEXT, piece=5), _raw_openai(openai, small)),
            (
                "anthropic",
                anthropic,
                lambda: anthropic_stream([text_block(TEXT)], piece=5),
                _raw_anthropic(anthropic, small),
            ),
        )
        for label, adapter, reply, raw in cases:
            server.responder = lambda recorded, make=reply: make()

            def through_adapter(model: object = adapter) -> None:
                chunks = list(model.stream(small))  # type: ignore[attr-defined]
                assert isinstance(chunks[-1], Final) and chunks[-1].response.text == TEXT

            sdk_ms = median_ms(raw)
            adapter_ms = median_ms(through_adapter)
            ratio = adapter_ms / sdk_ms
            print(f"  {label:<10}  {sdk_ms:>7.1f} ms  {adapter_ms:>7.1f} ms  x{ratio:.2f}")


def _raw_openai(model: OpenAIChatModel, req: ModelRequest) -> Callable[[], None]:
    payload = model.build_payload(req)

    def run() -> None:
        with model._client.chat.completions.create(**payload) as stream:
            for _ in stream:
                pass

    return run


def _raw_anthropic(model: AnthropicModel, req: ModelRequest) -> Callable[[], None]:
    payload = model.build_payload(req)

    def run() -> None:
        with model._client.messages.create(**payload) as stream:
            for _ in stream:
                pass

    return run


if __name__ == "__main__":
    main()

"""The summarizer as a real provider: the official SDKs against the local wire server.

Each test runs once per wire format (OpenAI Chat Completions, Anthropic Messages). The
decision model is scripted; the compaction model is the real adapter, so the summarize
request goes over loopback exactly as it would to the vendor.
"""

from __future__ import annotations

from harness import Harness, HarnessConfig, tool
from harness.events import CompactionEvent, DoneEvent
from harness.messages import CheckpointItem, ModelRequest, ModelResponse
from harness.providers import ScriptedModel, build_model, call, reply
from tests.dialects import Dialect
from tests.histories import VALID_NOTE, filler
from tests.wire_server import Recorded, Reply, WireServer

# The `dialect` (once per wire format) and `server` (loopback) fixtures are in conftest.py.


@tool
def scan(area: str) -> str:
    """Scan an area of the table.

    Args:
        area: Which area.
    """
    return f"scan {area}: " + filler(6000, len(area))


def scanner(turns: int) -> ScriptedModel:
    count: list[int] = []

    def decide(request: ModelRequest) -> ModelResponse:
        count.append(1)
        return reply("done") if len(count) > turns else call("scan", area=f"a{len(count)}")

    return ScriptedModel(responder=decide, name="decider")


def small_window(config: HarnessConfig) -> HarnessConfig:
    config.context.compaction.context_window = 24_000
    config.context.compaction.reserve_tokens = 2000
    config.context.pruning.enabled = False
    return config


def test_a_real_provider_writes_the_checkpoint(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    def answer(request: Recorded) -> Reply:
        return dialect.text(VALID_NOTE, usage=(5000, 120, 0))

    server.responder = answer
    summarizer = build_model(dialect.config(server))
    with Harness(
        small_window(config), model=scanner(40), compaction_model=summarizer, tools=[scan]
    ) as h:
        events = list(h.run_stream("scan the table"))
        assert next(e for e in events if isinstance(e, DoneEvent)).status == "completed"
        checkpoints = [i for i in h.context.accumulated if isinstance(i, CheckpointItem)]
    assert server.requests, "the summarizer was never called"
    for recorded in server.requests:
        body = recorded.body
        assert not body.get("tools")  # a summarizer gets no tools
        turns = dialect.turns(body)
        text = "\n".join(turn.text for turn in turns)
        assert "handoff note" in text and "History to fold into the note" in text
    assert len(checkpoints) == 1
    assert "## Evidence\n- red_cube_1 at (0.412, -0.118, 0.021)" in checkpoints[0].text
    assert checkpoints[0].source.model == summarizer.name
    completed = [e for e in events if isinstance(e, CompactionEvent) and e.status == "completed"]
    assert completed and all(e.usage is not None for e in completed)
    assert completed[0].usage is not None and completed[0].usage.output_tokens == 120


def test_a_provider_error_from_the_summarizer_leaves_the_task_running(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.responder = lambda request: dialect.error(500, "summarizer backend down")
    summarizer = build_model(dialect.config(server))
    with Harness(
        small_window(config), model=scanner(40), compaction_model=summarizer, tools=[scan]
    ) as h:
        events = list(h.run_stream("scan the table"))
    done = next(e for e in events if isinstance(e, DoneEvent))
    assert done.status == "completed"
    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    failed = [e for e in compactions if e.status == "failed"]
    assert failed and "summarizer backend down" in failed[0].reason
    # it kept failing while over budget: the deterministic checkpoint took over
    assert any(e.status == "fallback" and e.mode == "deterministic" for e in compactions)

"""The episode tools are offered per task, from what they spent and saved so far."""

from __future__ import annotations

from typing import Any

from harness import Harness, HarnessConfig, tool
from harness.context.episodes.ledger import EpisodeLedger
from harness.events import NotificationEvent, ToolResultEvent
from harness.messages import ModelRequest
from harness.providers import ScriptedModel, call, reply

EPISODE_TOOLS = {"begin_episode", "end_episode", "condense_context"}


@tool
def look(area: str) -> str:
    """Look at an area.

    Args:
        area: Where to look.
    """
    return f"area {area}: " + "a mug, a plate and a fork; " * 40


def config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": 40, "failure_budget": 40},
            "memory": {"enabled": False},
            "context": {"episodes": {"enabled": True}},
        }
    )


def test_the_ledger_offers_until_tried_then_while_the_tools_pay() -> None:
    ledger = EpisodeLedger()
    assert ledger.offer()  # never offered: try them
    ledger.tasks_offered = 1
    assert not ledger.offer()  # offered for a whole task and never called
    ledger.charge(1000)
    assert not ledger.offer()  # spent 1000, saved nothing
    ledger.hold_out(300)
    for _ in range(3):
        ledger.tick()
    assert ledger.saved == 900 and not ledger.offer()
    ledger.tick()
    assert ledger.saved == 1200 and ledger.offer()
    ledger.release()  # a fold would have removed them anyway: no more credit
    ledger.tick()
    assert ledger.saved == 1200 and ledger.held_out == 0
    assert "called 1 time(s) in 1 task(s)" in ledger.describe()


def tool_names(request: ModelRequest) -> set[str]:
    return {spec.name for spec in request.tools}


def test_a_model_that_never_calls_them_is_not_offered_them_from_its_second_task() -> None:
    requests: list[ModelRequest] = []

    def decide(request: ModelRequest) -> Any:
        requests.append(request)
        looked = sum(1 for item in request.items if item.kind == "tool_result")
        return call("look", area=f"a{len(requests)}") if looked < 2 else reply("done")

    with Harness(config(), model=ScriptedModel(responder=decide), tools=[look]) as h:
        first = list(h.run_stream("look around"))
        first_requests = len(requests)
        second = list(h.run_stream("look again"))
    assert tool_names(requests[0]) >= EPISODE_TOOLS
    assert all(tool_names(r) >= EPISODE_TOOLS for r in requests[:first_requests])
    assert all(not (EPISODE_TOOLS & tool_names(r)) for r in requests[first_requests:])
    assert not [e for e in first if isinstance(e, NotificationEvent) and "episode" in e.message]
    notices = [e.message for e in second if isinstance(e, NotificationEvent)]
    assert any(m.startswith("episode tools not offered in this task") for m in notices)


def test_a_withheld_tool_called_anyway_is_refused_with_the_account() -> None:
    """Second task: the model calls begin_episode though it is not offered."""
    script = iter(
        [
            call("look", area="x"),
            reply("done"),
            call("begin_episode", kind="exploration", name="e1"),
            reply("done"),
        ]
    )
    model = ScriptedModel(responder=lambda request: next(script))
    with Harness(config(), model=model, tools=[look]) as h:
        list(h.run_stream("look"))
        events = list(h.run_stream("explore"))
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.name == "begin_episode" and result.is_error
    assert "not offered in this task" in result.text and "spending about 0" in result.text


def test_tools_that_paid_for_themselves_stay_offered() -> None:
    """A model that explores in episodes and condenses: the evictions keep more out than
    the bookkeeping requests took, so the second task offers the tools again."""
    requests: list[ModelRequest] = []
    steps: list[Any] = [
        call("begin_episode", kind="exploration", name="e1"),
        *[call("look", area=f"a{n}") for n in range(8)],
        call("end_episode", name="e1", conclusion="the mug is on the left"),
        *[call("look", area=f"b{n}") for n in range(5)],
        call("condense_context", completed_work=["looked at a0-a7"]),
        *[call("look", area=f"c{n}") for n in range(12)],
        reply("done"),
    ]
    script = iter([*steps, reply("done")])

    def decide(request: ModelRequest) -> Any:
        requests.append(request)
        return next(script)

    with Harness(config(), model=ScriptedModel(responder=decide), tools=[look]) as h:
        list(h.run_stream("explore"))
        ledger = h.session.context.episode_ledger
        assert ledger.calls == 3 and ledger.saved >= ledger.spent > 0, ledger.describe()
        list(h.run_stream("again"))
    assert tool_names(requests[-1]) >= EPISODE_TOOLS

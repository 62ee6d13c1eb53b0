"""The household planner acts on a place refused because its container is closed again
("... is closed; open it first"): it sets the held thing down, opens the container once,
picks the thing again and places it again; a second such refusal ends the task."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    RefreshedBlock,
    SystemBlock,
    ToolCall,
    ToolResultItem,
    ToolSpec,
    Verdict,
)
from harness.planner import Planner
from harness.planner.brief import parse_brief
from harness.planner.reopen import REOPEN_PREFIX, closed_refusal, reopen_step
from tests.libero_briefs import CONT, OBJ, SURF, brief, kitchen
from tests.tiers import examples, floor

TOOLS = ["pick", "place", "open", "close", "turn_on", "turn_off", "push", "open_gripper"]
DRAWER = "wooden_cabinet_1_top_region"
BOWL = "akita_black_bowl_1"
ONE_BOWL = {BOWL: (0.5, 0.3, 0.02)}
CLOSED = f"{DRAWER} (top drawer of wooden cabinet) is closed; open it first"


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, parameters={"type": "object", "properties": {}})


def _scene(holding: str, *, drawer: str, rest: str) -> str:
    """The kitchen with the top drawer ``drawer`` ("open", "closed" or "state=ajar") and
    the bowl held, or resting as ``rest`` says ("on main_table", "in ...")."""
    entries = []
    for ref, label, tags, pos, tail in kitchen(ONE_BOWL):
        if ref == DRAWER:
            tags = tags.replace("closed", drawer)
        if ref == BOWL:
            pos, tail = ((0.55, 0.02, 0.25), "") if holding == BOWL else (pos, rest)
        entries.append((ref, label, tags, pos, tail))
    return brief(entries, holding=holding)


class World:
    """Answers the planner's calls the way the LIBERO world did (libero_goal task 3,
    state 1): the pick pushes the opened drawer back to ajar, so the first place is refused;
    a ``refusals`` count of places are refused, the rest succeed."""

    def __init__(self, refusals: int = 1, *, set_down_judged: str = "success") -> None:
        self.items: list[Any] = [
            InstructionItem(text="open the top drawer and put the bowl inside")
        ]
        self.holding = "nothing"
        self.drawer = "closed"
        self.rest = "on main_table"
        self.refusals = refusals
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.set_down_judged = set_down_judged
        """The evaluator's verdict on the set-down (LIBERO's On judged the bowl off the
        marked area it was set down on, the hand free)."""

    def run(self, turns: int = 12) -> str:
        planner = Planner()
        for _ in range(turns):
            request = ModelRequest(
                system=[SystemBlock(name="system", text="...")],
                tools=[_spec(n) for n in TOOLS],
                items=self.items,
                refreshed=RefreshedBlock(
                    brief=_scene(self.holding, drawer=self.drawer, rest=self.rest)
                ),
            )
            response = planner.decide(request)
            self.items.append(AssistantItem(text=response.text, tool_calls=response.tool_calls))
            if not response.tool_calls:
                return response.text
            for call in response.tool_calls:
                self.calls.append((call.name, dict(call.arguments)))
                text, ok, kind = self.answer(call.name, call.arguments)
                judged = "success"
                if call.name == "place" and call.arguments["target"] != DRAWER:
                    judged = self.set_down_judged
                self.items.append(
                    ToolResultItem(
                        call_id=call.id,
                        name=call.name,
                        text=text,
                        is_error=not ok,
                        error_kind=kind,
                        evaluation=Verdict(status=judged, evidence="judged") if ok else None,
                    )
                )
        raise AssertionError("the planner did not end")

    def answer(self, name: str, args: dict[str, Any]) -> tuple[str, bool, str | None]:
        if name == "open":
            if self.holding != "nothing":
                return f"the gripper holds {self.holding}; place it first", False, "action_failed"
            self.drawer = "open"
            return "open: pulled it open", True, None
        if name == "pick":
            self.holding = args["ref"]
            self.drawer = "state=ajar" if self.drawer == "open" else self.drawer
            return "pick: approach, grasp, lift", True, None
        if name == "place":
            if args["target"] == DRAWER and self.refusals > 0:
                self.refusals -= 1
                return CLOSED, False, "action_failed"
            self.holding = "nothing"
            self.rest = f"{args['relation']} {args['target']}"
            return "place: transport, lower, release", True, None
        return f"{name}: done", True, None


@pytest.mark.parametrize("set_down_judged", ["success", "failure"])
def test_a_place_refused_as_closed_is_followed_by_set_down_open_pick_place(
    set_down_judged: str,
) -> None:
    """The set-down is done once the hand is free, whatever the evaluator says of the
    marked area it went to."""
    world = World(refusals=1, set_down_judged=set_down_judged)
    report = world.run()
    names = [name for name, _ in world.calls]
    assert names == ["open", "pick", "place", "place", "open", "pick", "place"]
    set_down = world.calls[3][1]
    assert set_down["ref"] == BOWL and set_down["target"] != DRAWER
    assert set_down["relation"] == "on"
    assert world.calls[4] == ("open", {"ref": DRAWER})
    assert world.calls[6] == world.calls[2]  # the same place, now with the drawer open
    assert report.endswith("Outcome: achieved")


def test_a_second_closed_refusal_after_the_reopen_ends_the_task() -> None:
    world = World(refusals=5)
    report = world.run()
    names = [name for name, _ in world.calls]
    assert names == ["open", "pick", "place", "place", "open", "pick", "place"]
    assert names.count("open") == 2  # the plan's own and one reopen: bounded
    assert "refused again after reopening" in report and CLOSED in report
    assert report.endswith("Outcome: not achieved")


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        (CLOSED, True),
        ("microwave_1 is closed; open it first", True),
        ("the basket is shut; open basket_1 first", True),
        (
            "microwave_1 is not open far enough: its door, open 76 degrees, stands in the way "
            "of the hand carrying white_yellow_mug_1 in through the opening; open microwave_1 "
            "wider first",
            True,
        ),
        ("no room to carry white_yellow_mug_1 in through microwave_1's opening", False),
        ("the gripper holds akita_black_bowl_1; place it first", False),
        ("akita_black_bowl_1 is 0.120 m across where it would be grasped", False),
        ("the drawer is closed", False),  # no remedy named
    ],
)
def test_which_refusals_name_opening_as_their_remedy(text: str, closed: bool) -> None:
    assert closed_refusal(text) is closed


class DrawnWorld(World):
    """Every answer drawn by hypothesis: each call succeeds or fails, a place into the
    drawer may be refused as closed again whatever the drawer's state, a pick may push the
    opened drawer ajar, and the evaluator's verdict on a success is drawn too. The world's
    own state (what is held, the drawer) follows what it answered."""

    def __init__(self, data: Any) -> None:
        super().__init__(refusals=0)
        self.data = data
        self.verdicts: dict[int, str] = {}

    def answer(self, name: str, args: dict[str, Any]) -> tuple[str, bool, str | None]:
        draw = self.data.draw
        if name == "place" and args.get("target") == DRAWER and draw(st.booleans(), "closed"):
            return CLOSED, False, "action_failed"
        if not draw(st.booleans(), f"{name} succeeds"):
            return f"{name}: the arm stopped short", False, "action_failed"
        if name == "pick" and draw(st.booleans(), "pushes the drawer ajar"):
            self.drawer = "state=ajar" if self.drawer == "open" else self.drawer
        return super().answer(name, args)


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_any_answers_end_the_task_with_at_most_one_reopen_and_never_open_in_hand(
    data: Any,
) -> None:
    """Attack: whatever the world answers (successes, failures, closed-again refusals at
    any point, any verdicts), the planner ends the task within a bound of turns, opens the
    container as a remedy at most once (MAX_REOPENS), sends each remedial open only with
    the hand free as the Brief showed it, and never reports achieved after a refused last
    place into the drawer."""
    world = DrawnWorld(data)
    holding_at_call: list[str] = []
    original = world.answer

    def answer(name: str, args: dict[str, Any]) -> tuple[str, bool, str | None]:
        holding_at_call.append(world.holding)
        return original(name, args)

    world.answer = answer  # type: ignore[method-assign]
    report = world.run(turns=60)  # raises when the planner has not ended by then
    turns = [item for item in world.items if isinstance(item, AssistantItem)]
    calls = [(turn, call) for turn in turns for call in turn.tool_calls]
    assert len(calls) == len(world.calls) == len(holding_at_call)
    remedial = [i for i, (turn, _) in enumerate(calls) if turn.text.startswith(REOPEN_PREFIX)]
    assert len(remedial) <= 1, [world.calls[i] for i in remedial]  # MAX_REOPENS, written apart
    for index in remedial:
        assert world.calls[index] == ("open", {"ref": DRAWER})
        assert holding_at_call[index] == "nothing", world.calls  # set down first
    if report.endswith("Outcome: achieved"):
        assert world.calls[-1][0] == "place" and world.calls[-1][1]["target"] == DRAWER
        last = world.items[-2]  # the result of the last call, before the answer
        assert isinstance(last, ToolResultItem) and not last.is_error, report
    TRIED["runs"] += 1
    TRIED["reopened"] += bool(remedial)
    TRIED["closed_refusals"] += sum(
        1 for i in world.items if isinstance(i, ToolResultItem) and i.text == CLOSED
    )


TRIED = {"runs": 0, "reopened": 0, "closed_refusals": 0}


def test_the_attack_reached_the_remedy() -> None:
    # after the property above (a tenth of its examples in the fast tier: tests/tiers.py)
    assert TRIED["runs"] >= floor(300) and TRIED["reopened"] >= floor(20), TRIED


def test_the_thing_is_not_set_down_on_an_area_another_thing_stands_on() -> None:
    """LIBERO-PRO libero_10_swap task 9: refused ("open microwave_1 wider first"), the held
    mug was set down on the one marked area farther from the microwave than it, a 2 cm area
    another mug stood on; it toppled over that mug, lying on its side too wide to grasp.
    It now goes back to an area nothing else stands on (here, where it stood)."""
    mug, oven = "white_yellow_mug_1", "microwave_1"
    inside = "microwave_1_heating_region"
    refused = (
        f"{oven} is not open far enough: its door, open 80 degrees, stands in the way of the "
        f"hand carrying {mug} in through the opening; open {oven} wider first"
    )
    text = brief(
        [
            (mug, "yellow and white mug", OBJ, (0.636, 0.018, 0.209), ""),
            (oven, "microwave", "surface, open, kind=fixture", (0.56, -0.245, 0.01), ""),
            (inside, "heating region of microwave", CONT, (0.56, -0.235, 0.1), ""),
            ("porcelain_mug_1", "white mug", OBJ, (0.654, 0.353, 0.04), "on table_mug_area"),
            ("table_mug_area", "table area mug", SURF, (0.66, 0.35, -0.04), ""),
            ("table_own_area", "table area own", SURF, (0.66, 0.0, -0.04), ""),
        ],
        holding=mug,
    )
    call = ToolCall(id="c1", name="place", arguments={"ref": mug, "target": inside})
    items: list[Any] = [
        InstructionItem(text="put the yellow and white mug in the microwave and close it"),
        AssistantItem(text="Step 2 of 3", tool_calls=[call]),
        ToolResultItem(call_id="c1", name="place", text=refused, is_error=True),
    ]
    step = reopen_step(items, parse_brief(text), {name: None for name in TOOLS})
    assert step is not None and step[1] is not None, step
    assert step[1] == ("place", {"ref": mug, "target": "table_own_area", "relation": "on"})

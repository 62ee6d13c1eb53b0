"""The household planner reads the stated workspace before it moves anything: a thing of
the plan (or the container a region of it belongs to) that the scene starts out of reach is
reported as the scene's doing, with nothing moved. LIBERO-PRO's position variants put the
basket 10 m off the table (libero_object_temp_y0.5) or throw the thing to pick off when
their published state settles (y0.4 task 3: the bbq sauce at (-0.291, -1.084))."""

from __future__ import annotations

from harness.messages import InstructionItem, ModelRequest, RefreshedBlock, SystemBlock, ToolSpec
from harness.planner import Planner
from tests.libero_briefs import GROCERIES, brief, groceries

TOOLS = ["pick", "place", "open", "close", "turn_on", "turn_off", "push", "update_task_notes"]
WORKSPACE = "Reachable workspace (world frame): x 0.100..0.950, y -0.500..0.500, z -0.020..0.600"


def _first_turn(instruction: str, entries: list, embodiment: str = WORKSPACE) -> object:  # type: ignore[type-arg]
    request = ModelRequest(
        system=[
            SystemBlock(name="system", text="..."),
            SystemBlock(name="embodiment", text=embodiment),
        ],
        tools=[
            ToolSpec(name=n, description=n, parameters={"type": "object", "properties": {}})
            for n in TOOLS
        ],
        items=[InstructionItem(text=instruction)],
        refreshed=RefreshedBlock(brief=brief(entries)),
    )
    return Planner().decide(request)


def _moved(entries: list, ref: str, at: tuple[float, float, float]) -> list:  # type: ignore[type-arg]
    return [(r, name, tags, at if r == ref else pos, rest) for r, name, tags, pos, rest in entries]


def test_a_basket_off_the_table_is_reported_before_anything_moves() -> None:
    entries = groceries(GROCERIES)
    entries = _moved(entries, "basket_1", (0.591, 10.273, 0.035))
    entries = _moved(entries, "basket_1_contain_region", (0.591, 10.273, 0.067))
    response = _first_turn("pick up the tomato sauce and place it in the basket", entries)
    assert not response.tool_calls  # type: ignore[attr-defined]
    text = response.text  # type: ignore[attr-defined]
    assert "I did not move anything" in text
    assert "basket_1_contain_region at (0.591, 10.273)" in text
    assert "out of reach" in text and "before anything moved" in text
    assert "scene's doing" in text


def test_a_thing_to_pick_thrown_off_the_table_is_reported_before_anything_moves() -> None:
    entries = _moved(groceries(GROCERIES), "bbq_sauce_1", (-0.291, -1.084, 0.015))
    response = _first_turn("pick up the bbq sauce and place it in the basket", entries)
    assert not response.tool_calls  # type: ignore[attr-defined]
    assert "bbq_sauce_1 at (-0.291, -1.084) is out of reach" in response.text  # type: ignore[attr-defined]


def test_everything_within_reach_is_planned_as_before() -> None:
    response = _first_turn(
        "pick up the tomato sauce and place it in the basket", groceries(GROCERIES)
    )
    calls = response.tool_calls  # type: ignore[attr-defined]
    assert calls and calls[0].name == "pick"
    assert calls[0].arguments == {"ref": "tomato_sauce_1"}


def test_without_a_stated_workspace_nothing_is_declined() -> None:
    entries = _moved(groceries(GROCERIES), "bbq_sauce_1", (-0.291, -1.084, 0.015))
    response = _first_turn("pick up the bbq sauce and place it in the basket", entries, "")
    assert response.tool_calls  # type: ignore[attr-defined]


def test_a_scene_that_starts_with_the_task_done_is_reported_done_not_a_crash() -> None:
    """y0.4 task 2, state 2: the published state puts the salad dressing where it settles
    in the basket; the planner had asserted that a fresh plan has a first step."""
    entries = [
        (r, name, tags, pos, "in basket_1_contain_region" if r == "salad_dressing_1" else rest)
        for r, name, tags, pos, rest in groceries(GROCERIES)
    ]
    response = _first_turn("pick up the salad dressing and place it in the basket", entries)
    assert not response.tool_calls  # type: ignore[attr-defined]
    assert "I did not move anything: the Brief already shows" in response.text  # type: ignore[attr-defined]
    assert "Outcome: achieved" in response.text  # type: ignore[attr-defined]

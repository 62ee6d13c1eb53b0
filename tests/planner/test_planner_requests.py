"""The household planner reads requests as people say them (issue 40, items 2-4).

Questions and polite forms ask for what the plain sentence asks for; a negated qualifier
picks the other thing, and is an ambiguity when nothing fits the positive; an ambiguity is
a question to the user where a user channel exists (``query_user`` offered) and a refusal
naming the candidates where none does; the report states the frame left and right were
read in; a step the Brief shows undone is not reported done; a repeated refusal ends the
plan. Oracles: the plain sentence's own plan, the scene layouts written here.
"""

from __future__ import annotations

import json
from pathlib import Path
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
    ToolResultItem,
    ToolSpec,
    Verdict,
)
from harness.planner import Planner
from harness.planner.brief import parse_brief
from harness.planner.grounding import Unresolved
from harness.planner.household import plan_actions
from harness.planner.language import parse_task
from harness.planner.lexicon import normalise
from harness.planner.phrasing import plain_request
from tests.libero_briefs import brief, kitchen, living_room
from tests.tiers import examples

DATA = json.loads(
    (Path(__file__).parents[1] / "libero_data" / "published_instructions.json").read_text()
)
PUBLISHED = sorted({t["instruction"] for t in DATA["tasks"]})
POLITE = [
    "could you {s}?",
    "Can you please {s}?",
    "would you {s}, please?",
    "Please {s}.",
    "I'd like you to {s}",
    "i want you to {s} for me",
    "hey robot, could you kindly {s}?",
    "will you {s}?",
    "Okay, go ahead and {s}, thanks",
]
BASE_TOOLS = ["pick", "place", "open", "close", "turn_on", "turn_off", "push"]
TWO_BOWLS = {"akita_black_bowl_1": (0.50, 0.30, 0.02), "akita_black_bowl_2": (0.50, -0.05, 0.02)}


def lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(PUBLISHED), st.sampled_from(POLITE))
def test_a_question_or_a_polite_form_asks_for_the_plain_request(sentence: str, form: str) -> None:
    plain = parse_task(sentence)
    polite = parse_task(form.format(s=lower_first(sentence)))
    assert polite.ok == plain.ok
    assert polite.steps == plain.steps


@pytest.mark.parametrize(
    ("said", "plain"),
    [
        ("could you open the top drawer?", "open the top drawer"),
        ("please could you turn on the stove please", "turn on the stove"),
        ("so, can you put the bowl on the plate for me?", "put the bowl on the plate"),
        ("pick the bowl", "pick the bowl"),
        ("please", "please"),  # nothing but courtesy is still nothing to do
    ],
)
def test_courtesy_is_taken_off(said: str, plain: str) -> None:
    assert plain_request(normalise(said)) == plain


@pytest.mark.parametrize(
    "text", ["could you?", "can you please", "would you mind", "please could you the bowl"]
)
def test_a_question_without_a_request_is_still_a_problem(text: str) -> None:
    assert not parse_task(text).ok


def test_not_between_when_nothing_is_between_is_an_ambiguity() -> None:
    far = {"akita_black_bowl_1": (0.30, 0.45, 0.02), "akita_black_bowl_2": (0.30, -0.45, 0.02)}
    task = parse_task(
        "pick the black bowl not between the plate and the ramekin and put it on the plate"
    )
    with pytest.raises(Unresolved) as caught:
        plan_actions(task, parse_brief(brief(kitchen(far))))
    assert caught.value.candidates == ("akita_black_bowl_1", "akita_black_bowl_2")


# ====================================================================== turn by turn


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, parameters={"type": "object", "properties": {}})


class Episode:
    def __init__(self, instruction: str, tools: list[str], system: str = "") -> None:
        self.items: list[Any] = [InstructionItem(text=instruction)]
        self.tools = [_spec(n) for n in tools]
        self.system = [SystemBlock(name="embodiment", text=system or "Panda")]

    def turn(self, brief_text: str, result: str = "ok", **fields: Any) -> Any:
        request = ModelRequest(
            system=self.system,
            tools=self.tools,
            items=self.items,
            refreshed=RefreshedBlock(brief=brief_text),
        )
        response = Planner().decide(request)
        self.items.append(AssistantItem(text=response.text, tool_calls=response.tool_calls))
        for call in response.tool_calls:
            text = result if call.name != "query_user" else f"The user answered: {result}"
            self.items.append(ToolResultItem(call_id=call.id, name=call.name, text=text, **fields))
        return response


@pytest.mark.parametrize(
    ("answer", "bowl"),
    [
        ("akita_black_bowl_2", "akita_black_bowl_2"),
        ("the one with ref akita_black_bowl_1", "akita_black_bowl_1"),
        (
            "the left one",
            "akita_black_bowl_1",
        ),  # the viewer facing the robot: left is -y... see below
    ],
)
def test_an_ambiguity_is_asked_and_the_answer_settles_it(answer: str, bowl: str) -> None:
    scene = brief(kitchen(TWO_BOWLS))
    episode = Episode("put the bowl on the plate", [*BASE_TOOLS, "query_user"])
    asked = episode.turn(scene, result=answer)
    assert asked.tool_calls[0].name == "query_user"
    question = asked.tool_calls[0].arguments["question"]
    assert "akita_black_bowl_1" in question and "akita_black_bowl_2" in question
    acted = episode.turn(scene)
    assert acted.tool_calls[0].name == "pick"
    expected = bowl
    if answer == "the left one":  # the oracle: the smaller y is the viewer's left
        expected = min(TWO_BOWLS, key=lambda r: TWO_BOWLS[r][1])
    assert acted.tool_calls[0].arguments == {"ref": expected}


def test_an_answer_that_settles_nothing_is_asked_again_then_refused() -> None:
    scene = brief(kitchen(TWO_BOWLS))
    episode = Episode("put the bowl on the plate", [*BASE_TOOLS, "query_user"])
    names = []
    for _ in range(4):
        response = episode.turn(scene, result="I don't know")
        if not response.tool_calls:
            break
        names.append(response.tool_calls[0].name)
    assert names == ["query_user", "query_user"]
    assert response.text.endswith("Outcome: not achieved")
    assert "akita_black_bowl_1, akita_black_bowl_2" in response.text


def test_without_a_user_channel_an_ambiguity_is_refused_naming_the_candidates() -> None:
    response = Episode("put the bowl on the plate", BASE_TOOLS).turn(brief(kitchen(TWO_BOWLS)))
    assert not response.tool_calls
    assert "candidates: akita_black_bowl_1, akita_black_bowl_2" in response.text
    assert response.text.endswith("Outcome: not achieved")


CAMERA = "Camera agentview: at (1.160, 0.000, 0.580) looking at (0.450, 0.000, 0.000), 128x128"


def test_the_report_states_the_frame_of_left_and_right() -> None:
    entries = living_room()
    episode = Episode("put the red mug on the left plate", BASE_TOOLS, system=CAMERA)
    held = None
    for _ in range(4):
        response = episode.turn(
            brief(entries, holding=held or "nothing"),
            evaluation=Verdict(status="success", evidence="LIBERO predicate"),
        )
        if not response.tool_calls:
            break
        call = response.tool_calls[0]
        held = call.arguments["ref"] if call.name == "pick" else None
        if call.name == "place":
            entries = [
                (
                    r,
                    lab,
                    t,
                    p,
                    f"on {call.arguments['target']}" if r == call.arguments["ref"] else x,
                )
                for r, lab, t, p, x in entries
            ]
    assert "Frame: left/right as seen through camera agentview" in response.text
    assert "(0.00, -1.00)" in response.text


def test_a_switch_the_brief_shows_undone_is_not_reported_done() -> None:
    """turn_on succeeded by its verdict, but the Brief (LIBERO's TurnOn) shows the stove off:
    the planner tries again and, still off, reports not achieved."""
    episode = Episode("turn on the stove", BASE_TOOLS)
    scene = brief(kitchen({"akita_black_bowl_1": (0.5, 0.3, 0.02)}))  # the stove: state=off
    calls = []
    for _ in range(5):
        response = episode.turn(scene, evaluation=Verdict(status="success", evidence="ok"))
        if not response.tool_calls:
            break
        calls.append(response.tool_calls[0].name)
    assert calls == ["turn_on"] * 3
    assert response.text.endswith("Outcome: not achieved")
    on = scene.replace("state=off", "state=on")
    episode = Episode("turn on the stove", BASE_TOOLS)
    episode.turn(on, evaluation=Verdict(status="success", evidence="ok"))
    assert episode.turn(on).text.endswith("Outcome: achieved")


def test_a_repeated_refusal_ends_the_plan_with_its_reason() -> None:
    episode = Episode("open the top drawer of the cabinet", BASE_TOOLS)
    scene = brief(kitchen({"akita_black_bowl_1": (0.5, 0.3, 0.02)}))
    first = episode.turn(
        scene, result="the gripper holds x", is_error=True, error_kind="action_failed"
    )
    assert first.tool_calls[0].name == "open"
    second = episode.turn(
        scene,
        result="not run: this exact open call was refused at turn 1 (the gripper holds x)",
        is_error=True,
        error_kind="repeated_refusal",
    )
    assert second.tool_calls[0].name == "open"
    final = episode.turn(scene)
    # the first refusal's own reason, not the harness's notice about repeating it
    assert not final.tool_calls and "was refused: the gripper holds x." in final.text
    assert final.text.endswith("Outcome: not achieved")


# LIBERO-PRO's libero_spatial_task task 0, initial states 0 and 1 (robot-base frame, read from
# the simulator once): the ramekin at (0.46, 0.195), the plate at (0.75, 0.203)
PRO_STATE_0 = {
    "akita_black_bowl_1": (0.369, 0.230, 0.013),
    "akita_black_bowl_2": (0.488, 0.324, 0.013),
}
PRO_STATE_1 = {
    "akita_black_bowl_1": (0.612, 0.190, 0.013),
    "akita_black_bowl_2": (0.492, 0.312, 0.013),
}
NOT_BETWEEN = (
    "Pick the akita black bowl not between the plate and the ramekin and place it on the plate"
)


def _pro_scene(bowls: dict[str, tuple[float, float, float]]) -> list[Any]:
    entries = kitchen(bowls)
    moved = {
        "plate_1": (0.75, 0.203, -0.003),
        "glazed_rim_porcelain_ramekin_1": (0.46, 0.195, 0.009),
    }
    return [(r, lab, t, moved.get(r, p), x) for r, lab, t, p, x in entries]


def test_not_between_picks_the_other_bowl_when_one_is_between() -> None:
    actions = plan_actions(parse_task(NOT_BETWEEN), parse_brief(brief(_pro_scene(PRO_STATE_1))))
    assert actions[0] == ("pick", {"ref": "akita_black_bowl_2"})


def test_not_between_when_neither_bowl_is_between_is_asked_not_guessed() -> None:
    """Initial state 0: one bowl lies beyond the ramekin, the other beside the line's end;
    neither is between the plate and the ramekin, so both fit "not between" (the planner
    used to take the one farther from the midpoint and report success LIBERO denied)."""
    with pytest.raises(Unresolved) as caught:
        plan_actions(parse_task(NOT_BETWEEN), parse_brief(brief(_pro_scene(PRO_STATE_0))))
    assert caught.value.candidates == ("akita_black_bowl_1", "akita_black_bowl_2")


def test_a_place_the_evaluator_denies_is_not_done_whatever_the_brief_says() -> None:
    """LIBERO-PRO's libero_goal_object task 8: the evaluator (LIBERO's On) said the bowl
    was not on the plate, the Brief's geometry showed it there, and the planner reported
    success LIBERO denied. The latest verdict of a call now wins over the Brief."""
    one = {"akita_black_bowl_1": (0.5, 0.3, 0.02)}
    free = brief(kitchen(one))
    held = brief(kitchen(one), holding="akita_black_bowl_1")
    shown_on = brief(kitchen(one, {"akita_black_bowl_1": "on plate_1"}))
    episode = Episode("put the bowl on the plate", BASE_TOOLS)
    ok = Verdict(status="success", evidence="held")
    denied = Verdict(status="failure", evidence="LIBERO On(bowl, plate) does not hold")
    assert episode.turn(free, evaluation=ok).tool_calls[0].name == "pick"
    assert episode.turn(held, evaluation=denied).tool_calls[0].name == "place"
    after = episode.turn(shown_on)
    assert after.tool_calls and after.tool_calls[0].name == "pick"  # tried again, not claimed


# LIBERO-PRO's libero_spatial_task task 4, initial state 0 (robot-base frame, read from the
# simulator once): one bowl in the opened top drawer, the other on the cabinet's top
DRAWER_AND_TOP = {
    "akita_black_bowl_1": (0.747, -0.129, 0.177),
    "akita_black_bowl_2": (0.693, -0.276, 0.241),
}
WHERE = {
    "akita_black_bowl_1": "in wooden_cabinet_1_top_region",
    "akita_black_bowl_2": "on wooden_cabinet_1_top_side",
}


@pytest.mark.parametrize(
    ("said", "bowl"),
    [
        ("the akita black bowl on the top of the wooden cabinet", "akita_black_bowl_2"),
        ("the black bowl on top of the cabinet", "akita_black_bowl_2"),
        ("the bowl atop the wooden cabinet", "akita_black_bowl_2"),
        ("the bowl on the cabinet", "akita_black_bowl_2"),
        ("the bowl sitting on the cabinet's top", "akita_black_bowl_2"),
        ("the bowl resting on the cabinet top", "akita_black_bowl_2"),
        ("the bowl in the cabinet", "akita_black_bowl_1"),
        ("the bowl inside the top drawer", "akita_black_bowl_1"),
        ("the bowl in the top drawer of the wooden cabinet", "akita_black_bowl_1"),
        ("the bowl that is not on the cabinet", "akita_black_bowl_1"),
        ("the bowl that isn't on top of the cabinet", "akita_black_bowl_1"),
        ("the bowl other than the one in the top drawer", "akita_black_bowl_2"),
    ],
)
def test_on_the_cabinet_is_its_top_not_its_drawer(said: str, bowl: str) -> None:
    """ "On the top of the wooden cabinet" was read as "on the wooden cabinet", which the bowl
    in its drawer fitted as well (LIBERO's In counts the cabinet's drawer region): refused
    as an ambiguity. What a thing rests on is its "on"; what holds it, its "in"."""
    scene = parse_brief(brief(kitchen(DRAWER_AND_TOP, WHERE)))
    actions = plan_actions(parse_task(f"pick {said} and place it on the plate"), scene)
    assert actions[0] == ("pick", {"ref": bowl})


def test_from_the_cabinet_still_fits_both() -> None:
    scene = parse_brief(brief(kitchen(DRAWER_AND_TOP, WHERE)))
    with pytest.raises(Unresolved) as caught:
        plan_actions(parse_task("take the bowl from the cabinet and put it on the plate"), scene)
    assert caught.value.candidates == ("akita_black_bowl_1", "akita_black_bowl_2")


NEGATIONS = [
    "not {q}",
    "that is not {q}",
    "which is not {q}",
    "that isn't {q}",
    "that's not {q}",
    "other than the one {q}",
    "except the one {q}",
    "that is not the one {q}",
]


@settings(max_examples=examples(60), deadline=None)
@given(
    st.sampled_from(NEGATIONS),
    st.sampled_from(["between the plate and the ramekin", "between plate and ramekin"]),
    st.sampled_from(["pick", "pick up", "take", "grab"]),
    st.sampled_from(["akita black bowl", "black bowl", "bowl"]),
)
def test_a_negated_qualifier_reads_the_same_however_it_is_said(
    negation: str, qualifier: str, verb: str, noun: str
) -> None:
    said = f"{verb} the {noun} {negation.format(q=qualifier)} and put it on the plate"
    actions = plan_actions(parse_task(said), parse_brief(brief(_pro_scene(PRO_STATE_1))))
    assert actions[0] == ("pick", {"ref": "akita_black_bowl_2"})


@pytest.mark.parametrize(
    ("said", "first"),
    [
        ("move the plate to the stove’s front", "push"),
        ("Move the plate to the front of the stove", "push"),
        ("relocate the plate in front of the stove", "push"),
        ("could you move the plate to the stove's front?", "push"),
        ("put the plate in front of the stove", "pick"),
        ("set the plate down in front of the stove", "pick"),
        ("move the plate onto the stove", "pick"),
    ],
)
def test_moved_to_a_side_of_something_is_slid_there(said: str, first: str) -> None:
    """A plate "moved" to the stove's front: lifted by its rim, it hung from it and fell over
    on release, 4 cm outside the marked area, three times (LIBERO-PRO libero_goal_lan task
    5); "move" says neither carry nor slide, and along the table to a marked area of it a
    person slides it. "Put"/"place" set it down; "move onto" something lifts it there."""
    actions = plan_actions(parse_task(said), parse_brief(brief(kitchen(TWO_BOWLS))))
    assert actions[0][0] == first
    assert actions[-1][1]["target"] in {"main_table_stove_front_region", "flat_stove_1_cook_region"}


def test_a_plan_the_brief_already_shows_done_is_reported_not_a_crash() -> None:
    """LIBERO-PRO libero_spatial_with_yellow_book task 8 at state 0: the bowl "next to the
    plate" starts leaning on the plate's rim, so the Brief already lists it on the plate.
    Every step of the plan was done before any call, and the planner's turn ended in an
    AssertionError (a harness error, the episode lost). It now says what the Brief shows
    and moves nothing; the task check, not this report, decides the outcome."""
    scene = kitchen(
        {"akita_black_bowl_1": (0.60, 0.14, 0.03), "akita_black_bowl_2": (0.46, 0.32, 0.02)},
        {"akita_black_bowl_1": "on plate_1", "akita_black_bowl_2": "on main_table"},
    )
    episode = Episode("put the black bowl on the plate onto the plate", BASE_TOOLS)
    response = episode.turn(brief(scene))
    assert response.tool_calls == []
    assert "the Brief already shows akita_black_bowl_1 on plate_1." in response.text
    assert "did not move anything" in response.text

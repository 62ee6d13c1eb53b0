"""Evaluators: the model-based evaluator's own context, validation and repair round;
the programmatic evaluator; wiring from config."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from embodiment.types import Observation, PostCondition
from harness import Harness, HarnessConfig
from harness.events import EvaluationEvent
from harness.messages import AssistantItem, InstructionItem, ModelResponse
from harness.providers import ScriptedModel, call, reply
from harness.tools import Tool, ToolOutput
from harness.world.evaluation import ModelEvaluator, ProgrammaticEvaluator, parse_verdict
from worlds.fake import FakeRobot

PICK = Tool(
    "pick", "Pick an object.", lambda ref: "ok", physical=True, safety={"ref": "object_ref"}
)


def after() -> Observation:
    frame = np.zeros((48, 64, 3), dtype=np.uint8)
    frame[10:20, 10:20] = (200, 0, 0)
    return Observation(images={"front": frame, "wrist": frame}, state={"gripper_width": 0.04})


def verdict_json(
    status: str, evidence: str = "the red cube is between the fingers"
) -> ModelResponse:
    return reply(json.dumps({"status": status, "evidence": evidence}))


def evaluate(model: ScriptedModel, **options: Any) -> Any:
    evaluator = ModelEvaluator(
        model, post_conditions={"pick": "{ref} is held in the gripper"}, **options
    )
    return evaluator.evaluate(
        tool=PICK,
        arguments={"ref": "red_cube_1"},
        output=ToolOutput(text="closed"),
        observation=after(),
        segment=1,
    )


def test_model_evaluator_sends_images_and_post_condition_in_its_own_context() -> None:
    model = ScriptedModel([verdict_json("success")])
    verdict = evaluate(model)
    assert verdict.status == "success" and "between the fingers" in verdict.evidence
    assert verdict.evaluator == "model:scripted"
    [request] = model.requests
    assert request.purpose == "evaluate"
    assert [block.name for block in request.system] == ["evaluator"]
    assert [image.label for image in request.refreshed.images] == ["front", "wrist"]
    [question] = request.items
    assert isinstance(question, InstructionItem)
    assert "Post-condition: red_cube_1 is held in the gripper" in question.text
    assert "gripper_width" in request.refreshed.observation


def test_one_repair_round_on_malformed_output() -> None:
    model = ScriptedModel([reply("It looks held to me!"), verdict_json("failure", "cube on table")])
    verdict = evaluate(model)
    assert verdict.status == "failure" and verdict.evidence.startswith("cube on table")
    assert len(model.requests) == 2
    repair = model.requests[1].items
    assert isinstance(repair[1], AssistantItem) and repair[1].text == "It looks held to me!"
    assert "not a valid verdict: no JSON object found" in repair[2].text


def test_malformed_twice_is_a_failure_never_a_success() -> None:
    model = ScriptedModel([reply('{"status": "great"}'), reply("```json\n{oops}\n```")])
    verdict = evaluate(model)
    assert verdict.status == "failure"
    assert "malformed twice" in verdict.evidence and "status" in verdict.evidence
    model.assert_consumed()


def test_process_is_only_accepted_for_segment_tools() -> None:
    model = ScriptedModel([verdict_json("process"), verdict_json("success")])
    assert evaluate(model).status == "success"
    assert "only allowed for segmented actions" in model.requests[1].items[2].text
    segmented = ScriptedModel([verdict_json("process", "still closing")])
    assert evaluate(segmented, segment_tools=["pick"]).status == "process"


def test_no_image_or_no_post_condition_cannot_succeed() -> None:
    evaluator = ModelEvaluator(ScriptedModel([]), post_conditions={})
    verdict = evaluator.evaluate(
        tool=PICK, arguments={"ref": "a"}, output=ToolOutput(), observation=after(), segment=1
    )
    assert verdict.status == "failure" and "no post-condition" in verdict.evidence
    blind = ModelEvaluator(ScriptedModel([]), post_conditions={"pick": "held"})
    verdict = blind.evaluate(
        tool=PICK, arguments={}, output=ToolOutput(), observation=Observation(), segment=1
    )
    assert verdict.status == "failure" and "no post-execution image" in verdict.evidence


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"status": "success"}', "evidence: Field required"),
        ('{"status": "yes", "evidence": "x"}', "status: Input should be"),
        ("[1, 2]", "no JSON object found"),
        ('{"status": "success", "evidence": "x",}', "invalid JSON"),
    ],
)
def test_parse_verdict_explains_what_is_wrong(text: str, problem: str) -> None:
    answer, error = parse_verdict(text, allow_process=False)
    assert answer is None and problem in error


def test_programmatic_evaluator_wraps_post_conditions() -> None:
    class Checker:
        def check(self, action: str, arguments: Any, result: Any) -> PostCondition | None:
            if action == "pick":
                return PostCondition(status="failure", evidence="nothing between the fingers")
            return None

    evaluator = ProgrammaticEvaluator(Checker())
    verdict = evaluator.evaluate(
        tool=PICK, arguments={"ref": "a"}, output=ToolOutput(), observation=None, segment=1
    )
    assert (verdict.status, verdict.evaluator) == ("failure", "programmatic")
    other = Tool("wave", "Wave.", lambda: "ok", physical=True)
    unknown = evaluator.evaluate(
        tool=other, arguments={}, output=ToolOutput(), observation=None, segment=1
    )
    assert unknown.status == "failure" and "no post-condition" in unknown.evidence


def test_model_evaluator_from_config_judges_a_real_loop_turn() -> None:
    verdict = {"status": "failure", "evidence": "the gripper is empty", "failure_reason": "slip"}
    config = HarnessConfig.model_validate(
        {
            "embodiment": "panda_tabletop",
            "driver": {"name": "fake", "objects": {"red_cube_1": [0.5, 0.1, 0.645]}},
            "run": {"store": None},
            "memory": {"enabled": False},
            "evaluation": {
                "required_tools": ["pick"],
                "model": {
                    "provider": "scripted",
                    "name": "vision-judge",
                    "options": {"responses": [{"text": json.dumps(verdict)}]},
                },
            },
        }
    )
    model = ScriptedModel([call("pick", ref="red_cube_1"), reply("tried")])
    with Harness.from_config(config, model=model) as h:
        assert isinstance(h.evaluator, ModelEvaluator)
        assert isinstance(h.driver, FakeRobot)
        events = list(h.run_stream("pick the red cube"))
        notes = h.task_notes.render()
    [evaluation] = [e for e in events if isinstance(e, EvaluationEvent)]
    assert evaluation.verdict.status == "failure"
    assert evaluation.verdict.evaluator == "model:vision-judge"
    assert "the gripper is empty (reason: slip)" in evaluation.verdict.evidence
    assert "pick: failure" in notes
    second_request_items = model.requests[1].items
    assert any("evaluation: failure" in getattr(item, "text", "") for item in second_request_items)


def test_model_evaluator_needs_a_post_condition_per_required_tool() -> None:
    from harness.errors import ConfigError

    config = HarnessConfig.model_validate(
        {
            "driver": {"name": "fake"},
            "run": {"store": None},
            "evaluation": {
                "required_tools": ["pick", "wave"],
                "model": {"provider": "scripted", "options": {"responses": [{"text": "x"}]}},
            },
        }
    )
    with pytest.raises(ConfigError) as info:
        Harness.from_config(config, model=ScriptedModel([]))
    assert info.value.key == "evaluation.post_conditions" and "wave" in str(info.value)

"""``evaluate_run`` implementations: the hidden hook that judges a physical tool's outcome.

- :class:`ProgrammaticEvaluator` asks a driver's post-condition checker (the simulator
  judges from ground truth).
- :class:`ModelEvaluator` is for real robots: in a context of its own (never the acting
  model's transcript) it sends the post-execution camera images and the tool's
  post-condition to a vision model, and validates the JSON verdict it answers, allowing
  one repair round when the answer is malformed. A second malformed answer, or ``process``
  for a tool that is not segmented, counts as ``failure``: an unverifiable outcome is never
  reported as a success.

The loop feeds each verdict to the failure budget, the Task Notes, the scene graph and
tool-experience memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from embodiment.types import (
    ActionSpec,
    Observation,
    PostConditionChecker,
    fill_post_condition,
)
from harness.cancel import call_cancellable
from harness.config import ObservationConfig
from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    RefreshedBlock,
    SystemBlock,
    Verdict,
)
from harness.providers.base import Model, complete
from harness.tools import Tool, ToolOutput
from harness.world.observation import encode_observation_frames, render_observation

__all__ = [
    "EVALUATOR_PROMPT",
    "Judge",
    "ModelEvaluator",
    "ProgrammaticEvaluator",
    "parse_json_answer",
    "parse_verdict",
]

EVALUATOR_PROMPT = """\
You check whether a robot action achieved its post-condition. You see only the camera
images taken right after the action, the robot's readings, the action and its
post-condition. Judge from the evidence alone; do not assume the action worked.

Answer with one JSON object and nothing else:
{"status": "success" | "failure" | "process", "evidence": "what you see that decides it",
 "failure_reason": "why it failed (only for failure)"}
Use "process" only when told the action runs in segments and it is visibly still under way.
"""


class ProgrammaticEvaluator:
    """Verdicts from a driver's :class:`~embodiment.types.PostConditionChecker`."""

    def __init__(self, checker: PostConditionChecker, *, name: str = "programmatic") -> None:
        self.checker = checker
        self.name = name

    def evaluate(
        self,
        *,
        tool: Tool,
        arguments: Mapping[str, Any],
        output: ToolOutput,
        observation: Observation | None,
        segment: int,
    ) -> Verdict:
        result = self.checker.check(tool.name, arguments, output.applied)
        if result is None:
            return Verdict(
                status="failure",
                evidence=f"no post-condition is defined for {tool.name}; its outcome cannot "
                "be confirmed",
                evaluator=self.name,
            )
        return Verdict(status=result.status, evidence=result.evidence, evaluator=self.name)


class _VerdictAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    status: Literal["success", "failure", "process"]
    evidence: str = Field(min_length=1)
    failure_reason: str | None = None


AnswerT = TypeVar("AnswerT", bound=BaseModel)


def parse_json_answer(text: str, schema: type[AnswerT]) -> tuple[AnswerT | None, str]:
    """The JSON object in a model's answer validated as ``schema`` (code fences and prose
    around it tolerated), or (None, what is wrong with it, in words the model can fix)."""
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip(), flags=re.IGNORECASE)
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end <= start:
        return None, "no JSON object found"
    try:
        data = json.loads(cleaned[start : end + 1])
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg} at character {exc.pos})"
    try:
        return schema.model_validate(data), ""
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "(object)"
        return None, f"{where}: {problem['msg']}"


def parse_verdict(text: str, *, allow_process: bool) -> tuple[_VerdictAnswer | None, str]:
    """The verdict in a model's answer, or (None, what is wrong with it)."""
    answer, problem = parse_json_answer(text, _VerdictAnswer)
    if answer is None:
        return None, problem
    if answer.status == "process" and not allow_process:
        return (
            None,
            "status 'process' is only allowed for segmented actions; say success or failure",
        )
    return answer, ""


class Judge:
    """A model asked for a JSON verdict in a context of its own, with one repair round.

    Shared by the per-action :class:`ModelEvaluator` and the whole-task check
    (:class:`harness.world.model_task_check.ModelTaskCheck`): the request carries only the
    judge's prompt, the question and the images after the fact; a malformed answer gets
    one request to fix it (saying what is wrong and the shape wanted); a second malformed
    answer is reported as such, never guessed at.
    """

    def __init__(
        self, model: Model, *, prompt_name: str, prompt: str, max_output_tokens: int
    ) -> None:
        self.model = model
        self.prompt_name = prompt_name
        self.prompt = prompt
        self.max_output_tokens = max_output_tokens

    def answer(
        self,
        question: str,
        refreshed: RefreshedBlock,
        parse: Callable[[str], tuple[AnswerT | None, str]],
        *,
        shape: str,
        cancelled: Callable[[], bool] | None = None,
    ) -> tuple[AnswerT | None, list[str]]:
        """The parsed answer, or (None, the problems of both attempts)."""
        items: list[Any] = [InstructionItem(text=question)]
        text = self._ask(items, refreshed, cancelled)
        answer, problem = parse(text)
        if answer is not None:
            return answer, []
        items += [
            AssistantItem(text=text[:4000]),
            InstructionItem(
                text=f"Your answer is not a valid verdict: {problem}. Reply again with only "
                f"the JSON object {shape}."
            ),
        ]
        answer, second = parse(self._ask(items, refreshed, cancelled))
        return answer, ([] if answer is not None else [problem, second])

    def _ask(
        self, items: list[Any], refreshed: RefreshedBlock, cancelled: Callable[[], bool] | None
    ) -> str:
        request = ModelRequest(
            system=[SystemBlock(name=self.prompt_name, text=self.prompt)],
            items=items,
            refreshed=refreshed,
            max_output_tokens=self.max_output_tokens,
            purpose="evaluate",
        )
        response = call_cancellable(
            lambda worker_cancelled: complete(self.model, request, cancelled=worker_cancelled),
            cancelled=cancelled,
            what=f"the {self.prompt_name} model call",
        )
        return response.text


class ModelEvaluator:
    """A vision model judges post-conditions from post-execution images (real robots).

    Args:
        model: The evaluator model (its own requests; it never sees the acting model's
            context).
        post_conditions: Tool name -> post-condition, as text with ``{argument}``
            placeholders or as the driver's :class:`ActionSpec`.
        segment_tools: Tools allowed to answer ``process``.
        max_images: Camera views sent per verdict.
    """

    def __init__(
        self,
        model: Model,
        *,
        post_conditions: Mapping[str, str | ActionSpec],
        segment_tools: Collection[str] = (),
        max_images: int = 3,
        image_settings: ObservationConfig | None = None,
        max_output_tokens: int = 400,
    ) -> None:
        self.model = model
        self.post_conditions = dict(post_conditions)
        self.segment_tools = set(segment_tools)
        self.max_images = max_images
        self.image_settings = image_settings or ObservationConfig()
        self.max_output_tokens = max_output_tokens
        self.name = f"model:{getattr(model, 'name', 'evaluator')}"
        self.judge = Judge(
            model,
            prompt_name="evaluator",
            prompt=EVALUATOR_PROMPT,
            max_output_tokens=max_output_tokens,
        )

    def condition(self, tool: str, arguments: Mapping[str, Any]) -> str:
        entry = self.post_conditions.get(tool)
        if entry is None:
            return ""
        if isinstance(entry, ActionSpec):
            return entry.describe_post_condition(arguments)
        return fill_post_condition(entry, arguments)

    def evaluate(
        self,
        *,
        tool: Tool,
        arguments: Mapping[str, Any],
        output: ToolOutput,
        observation: Observation | None,
        segment: int,
    ) -> Verdict:
        condition = self.condition(tool.name, arguments)
        if not condition:
            return self._verdict("failure", f"no post-condition is defined for {tool.name}")
        if observation is None or not observation.images:
            return self._verdict("failure", "no post-execution image to judge the outcome from")
        images = encode_observation_frames(observation, self.image_settings, limit=self.max_images)
        allow_process = tool.name in self.segment_tools
        question = (
            f"Action: {tool.name}({json.dumps(dict(arguments), sort_keys=True, default=str)})\n"
            f"Post-condition: {condition}\n"
            + (
                f"This action runs in segments; this was segment {segment}.\n"
                if allow_process
                else ""
            )
            + f"Images: {', '.join(image.label for image in images)} (taken after the action)."
        )
        refreshed = RefreshedBlock(observation=render_observation(observation), images=images)
        answer, problems = self.judge.answer(
            question,
            refreshed,
            lambda text: parse_verdict(text, allow_process=allow_process),
            shape='{"status": ..., "evidence": ..., "failure_reason": ...}',
        )
        if answer is None:
            return self._verdict(
                "failure",
                f"the evaluator's answer was malformed twice ({'; then '.join(problems)}); "
                "the outcome is unconfirmed",
            )
        evidence = answer.evidence
        if answer.status == "failure" and answer.failure_reason:
            evidence += f" (reason: {answer.failure_reason})"
        return self._verdict(answer.status, evidence)

    def _verdict(self, status: Literal["success", "failure", "process"], evidence: str) -> Verdict:
        return Verdict(status=status, evidence=evidence, evaluator=self.name)

"""The planner's answers: one tool call, or text ending with its own outcome claim."""

from __future__ import annotations

from typing import Any

from harness.messages import ModelResponse, ToolCall, new_id
from harness.prompts import OUTCOME_ACHIEVED_LINE, OUTCOME_NOT_ACHIEVED_LINE

__all__: list[str] = []  # helpers of the planner modules only


def tool_call(name: str, arguments: dict[str, Any], text: str = "") -> ModelResponse:
    return ModelResponse(
        text=text, tool_calls=[ToolCall(id=new_id("call"), name=name, arguments=arguments)]
    )


def say(text: str) -> ModelResponse:
    return ModelResponse(text=text)


def claimed(text: str, achieved: bool) -> str:
    """A final report ending with the planner's own claim (the ``Outcome:`` line)."""
    return f"{text}\n{OUTCOME_ACHIEVED_LINE if achieved else OUTCOME_NOT_ACHIEVED_LINE}"


def join_sentences(*parts: str) -> str:
    return " ".join(part for part in parts if part)

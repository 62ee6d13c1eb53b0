"""Capability admission: tool definitions and loaded skill bodies must fit a ceiling.

Tool definitions and skill bodies are *capability context*: they are Resident for a whole
task, compaction never shrinks them, and they are charged against the same input budget as
the conversation. So they are admitted, or refused, up front:

- the ceiling is a share (:data:`CAPABILITY_SHARE`) of the model's usable input budget
  (``context_window - reserve_tokens``), less a safety margin
  (:data:`CAPABILITY_MARGIN_TOKENS`) because token counts are estimates;
- tool definitions plus every loaded skill body must stay under it, and the fixed part of
  the request (Resident, tools, Refreshed) plus the new item must still leave the margin
  free below the budget;
- an item that does not fit is refused with its estimated size, what is already in use and
  the ceiling. Nothing is ever truncated to make it fit: half a procedure is worse than
  none on a robot.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.context import Context

__all__ = [
    "CAPABILITY_MARGIN_TOKENS",
    "CAPABILITY_SHARE",
    "Admission",
    "admit_skill",
    "admit_tool_definitions",
    "capability_ceiling",
]

CAPABILITY_MARGIN_TOKENS = 512
"""Tokens kept free beyond admitted capability context (estimates are not exact)."""
CAPABILITY_SHARE = 0.5
"""Tool definitions and loaded skill bodies together may take at most this share of the
usable input budget; the rest is for the conversation, the Brief and the observation."""


TOOLS_REMEDY = (
    " Offer fewer tools (turn off subagents.enabled or context.episodes.enabled, narrow an"
    " MCP server with its allow/deny lists) or use a model with a larger context window."
)
"""What a user can do when the tool definitions alone do not fit (a small local model)."""


def capability_ceiling(budget_tokens: int) -> int:
    """The most capability context a model with this usable input budget admits."""
    return max(0, int(budget_tokens * CAPABILITY_SHARE) - CAPABILITY_MARGIN_TOKENS)


@dataclass(frozen=True)
class Admission:
    """The outcome of one admission check, with every number the refusal names."""

    what: str
    needed: int
    tools: int
    skills: int
    ceiling: int
    budget: int
    fixed: int
    """Tokens of the request without Accumulated (Resident, tools, Refreshed)."""
    remedy: str = ""
    """What to do about a refusal, appended to it (empty: nothing specific)."""

    @property
    def in_use(self) -> int:
        return self.tools + self.skills

    @property
    def over_ceiling(self) -> bool:
        return self.in_use + self.needed > self.ceiling

    @property
    def over_budget(self) -> bool:
        return self.fixed + self.needed + CAPABILITY_MARGIN_TOKENS > self.budget

    @property
    def admitted(self) -> bool:
        return not (self.over_ceiling or self.over_budget)

    def refusal(self) -> str:
        """Why it was refused, with the estimated size, the use so far and the ceiling."""
        limits = (
            f"the ceiling is {self.ceiling} tokens ({CAPABILITY_SHARE:.0%} of the "
            f"{self.budget}-token input budget less a {CAPABILITY_MARGIN_TOKENS}-token "
            "safety margin)"
        )
        if self.over_ceiling:
            return (
                f"{self.what} would add about {self.needed} tokens; capability context already "
                f"uses {self.in_use} (tool definitions {self.tools}, loaded skills "
                f"{self.skills}) and {limits}. Refused, nothing was truncated.{self.remedy}"
            )
        return (
            f"{self.what} would add about {self.needed} tokens but the fixed part of the request "
            f"already uses {self.fixed} of the {self.budget}-token input budget, leaving "
            f"less than the {CAPABILITY_MARGIN_TOKENS}-token safety margin. Refused, nothing "
            f"was truncated.{self.remedy}"
        )


def _loaded_skill_tokens(context: Context) -> int:
    raw = sum(
        context.estimator.text(block.text)
        for block in context.resident_blocks()
        if block.name.startswith("skill:")
    )
    return context.estimator.calibrated(raw)


def admit_skill(context: Context, *, name: str, text: str) -> Admission:
    """May the skill body ``text`` join Resident context for the rest of the task?"""
    estimator = context.estimator
    return Admission(
        what=f"skill {name!r}",
        needed=estimator.calibrated(estimator.text(text)),
        tools=estimator.calibrated(context.tools_tokens()),
        skills=_loaded_skill_tokens(context),
        ceiling=capability_ceiling(context.budget.threshold),
        budget=context.budget.threshold,
        fixed=context.fixed_tokens(),
    )


def admit_tool_definitions(context: Context) -> Admission:
    """Do the task's tool definitions (already set on ``context``) fit the ceiling?"""
    tools = context.estimator.calibrated(context.tools_tokens())
    return Admission(
        what=f"the tool definitions ({len(context.tools)} tools)",
        needed=tools,
        tools=0,
        skills=_loaded_skill_tokens(context),
        ceiling=capability_ceiling(context.budget.threshold),
        budget=context.budget.threshold,
        fixed=context.fixed_tokens() - tools,
        remedy=TOOLS_REMEDY,
    )

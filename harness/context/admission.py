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

A window too small for every tool gets a smaller tool set rather than a refusal
(:func:`select_tools`): the optional features' tools (``Tool.optional``: sub-agents, then
episodes, archive search and scene queries) are left out one feature at a time until the
rest fits, the
way the overflow ladder degrades a request, and the offer names what it left out. Only a
window too small for the tools a task cannot do without is refused.

Where the model's server can count a prompt itself (:func:`calibrate_from_server`), the
estimate is calibrated to its count before the first decision, so this check, the budget
and every threshold use the model's own tokens rather than a character estimate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.context import Context
from harness.messages import ModelRequest

__all__ = [
    "CAPABILITY_MARGIN_TOKENS",
    "CAPABILITY_SHARE",
    "OPTIONAL_FEATURES",
    "Admission",
    "ToolOffer",
    "admit_skill",
    "admit_tool_definitions",
    "calibrate_from_server",
    "capability_ceiling",
    "select_tools",
]

log = logging.getLogger(__name__)

OPTIONAL_FEATURES: tuple[str, ...] = (
    "sub-agents",
    "episodes",
    "archive search",
    "scene queries",
)
"""The features whose tools a small window may go without, in the order they are left
out (``Tool.optional`` names one): delegation first (a sub-agent needs a window of its
own), then the episode and condensation tools (compaction still works without them), then
searching the archive (``recall`` by address stays), then querying the scene graph (the
Brief still shows the scene every turn). With Gemma 3's template, the default tabletop's
20 definitions count 3,729 tokens against an 8,192-token window's 2,560-token ceiling;
without these four features, about 2,050."""
FEATURE_SWITCHES = {
    "sub-agents": "subagents.enabled",
    "episodes": "context.episodes.enabled",
    "archive search": "",
    "scene queries": "",
}
"""The config key that turns each feature off, for the notice (none for archive search)."""

CAPABILITY_MARGIN_TOKENS = 512
"""Tokens kept free beyond admitted capability context (estimates are not exact)."""
CAPABILITY_SHARE = 0.5
"""Tool definitions and loaded skill bodies together may take at most this share of the
usable input budget; the rest is for the conversation, the Brief and the observation."""


TOOLS_REMEDY = (
    " Offer fewer tools (narrow an MCP server with its allow/deny lists, list fewer tools in"
    " the config) or use a model with a larger context window."
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


@dataclass(frozen=True)
class ToolOffer:
    """What a lane offers the model: the tools whose definitions fit, the optional
    features left out to make them fit (feature -> tool names), and the refusal when even
    the tools left over do not fit."""

    offered: list[Any]
    left_out: dict[str, list[str]] = field(default_factory=dict)
    admission: Admission | None = None
    refusal: str | None = None

    def notice(self) -> str | None:
        """The operator's notice naming what was left out and why, or None."""
        if not self.left_out:
            return None
        parts = [f"{feature} ({', '.join(names)})" for feature, names in self.left_out.items()]
        switches = [FEATURE_SWITCHES[f] for f in self.left_out if FEATURE_SWITCHES.get(f)]
        text = "the model's window is too small for every tool definition: left out " + "; ".join(
            parts
        )
        if self.admission is not None:
            text += (
                f". The {len(self.offered)} tools offered take about {self.admission.needed} "
                f"tokens of the {self.admission.ceiling}-token ceiling"
            )
        text += ". A model with a larger window gets them all"
        if switches:
            text += f"; turning {' and '.join(switches)} off says so in the config"
        return text + "."

    def reason(self, name: str) -> str | None:
        """Why ``name`` is not offered (a model that calls it anyway reads this)."""
        for feature, names in self.left_out.items():
            if name in names:
                return (
                    f"not offered in this session: the model's window is too small for the "
                    f"{feature} tools, which were left out"
                )
        return None


def select_tools(
    context: Context,
    tools: Sequence[Any],
    *,
    count: Callable[[ModelRequest], int | None] | None = None,
) -> ToolOffer:
    """The tools ``context`` offers out of ``tools`` (the visible ones, in order), set on
    ``context``: all of them when their definitions fit (:func:`admit_tool_definitions`),
    else without the tools of :data:`OPTIONAL_FEATURES`, one feature at a time, until the
    rest fits. ``count``: the model server's own count of a prompt (see
    :func:`calibrate_from_server`), used to calibrate the estimate first."""
    offered = list(tools)
    context.set_tools([tool.spec() for tool in offered])
    if count is not None:
        calibrate_from_server(context, count)
    admission = admit_tool_definitions(context)
    left_out: dict[str, list[str]] = {}
    for feature in OPTIONAL_FEATURES:
        if admission.admitted:
            break
        names = [t.name for t in offered if getattr(t, "optional", None) == feature]
        if not names:
            continue
        left_out[feature] = names
        offered = [t for t in offered if t.name not in names]
        context.set_tools([tool.spec() for tool in offered])
        admission = admit_tool_definitions(context)
    return ToolOffer(
        offered=offered,
        left_out=left_out,
        admission=admission,
        refusal=None if admission.admitted else admission.refusal(),
    )


def calibrate_from_server(context: Context, count: Callable[[ModelRequest], int | None]) -> bool:
    """Calibrate ``context``'s estimate to the model server's own count of the fixed part
    of a request (Resident and the tool definitions), once per estimator: before the first
    decision, so the tools-fit check and the first budget use the model's tokens. Returns
    whether the server counted (``count`` returns None where it cannot)."""
    estimator = context.estimator
    if estimator.server_counted:
        return True
    request = ModelRequest(system=context.resident_blocks(), tools=context.tools, items=[])
    try:
        counted = count(request)
    except Exception as exc:  # a count is an optimisation: the estimate stands without it
        log.info("the model server did not count the prompt: %s", exc)
        return False
    if not counted:
        return False
    sections = context.sections(accumulated=())
    estimated = sections["resident"] + sections["tools"]
    estimator.server_counted = True
    estimator.observe_usage(estimated_prompt=estimated, reported_prompt=counted)
    log.info(
        "the model server counts %d tokens for the resident context and tool definitions "
        "(estimated %d); the estimate is calibrated to it",
        counted,
        estimated,
    )
    return True

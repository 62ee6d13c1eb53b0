"""A sub-agent's contract: what a ``delegate`` call asks for, and the tools it may use.

The budgets a call asks for are capped by ``subagents`` in the configuration; the tools are
narrowed to the requested names or patterns plus :data:`BOOKKEEPING_TOOLS`, never
``delegate`` itself, and a physical tool is withheld (with the reason the child reads)
unless ``subagents.physical`` allows it. Running the child is
:mod:`harness.runtime.delegation.delegate`; what it hands back,
:mod:`harness.runtime.delegation.handoff`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from harness.runtime.session import Session
from harness.tools import ToolRegistry

__all__ = [
    "BOOKKEEPING_TOOLS",
    "DELEGATE_TOOL",
    "HANDOFF_SCHEMA",
    "Contract",
    "DelegateArgs",
    "Narrowed",
    "SubagentRefused",
    "contract_of",
    "narrow_tools",
]

DELEGATE_TOOL = "delegate"
BOOKKEEPING_TOOLS = (
    "update_task_notes",
    "recall",
    "search_archive",
    "begin_episode",
    "end_episode",
    "condense_context",
)
"""Built-ins every child has besides the tools it was given (when the session offers
them): its own Task Notes, reading the session's archive, and its own episodes and
condensation, which act on the child's context only. None of them acts on the world or
talks to the operator."""

HANDOFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {
            "enum": ["completed", "failed"],
            "description": "failed when the goal could not be reached",
        },
        "summary": {"type": "string", "description": "one or two sentences"},
        "findings": {
            "type": "array",
            "items": {"type": ["string", "object"]},
            "description": "facts found: text, or objects such as "
            '{"ref": ..., "position": [x, y, z], "confidence": 0.9}',
        },
        "decisions": {"type": "array", "items": {"type": "string"}},
        "world_changes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "what you changed in the world (empty if nothing)",
        },
        "verification": {
            "type": "array",
            "items": {"type": "string"},
            "description": "how the findings were checked",
        },
        "unresolved": {"type": "array", "items": {"type": "string"}},
        "evidence": {
            "type": "array",
            "items": {"type": "string", "pattern": "^archive://\\S+$"},
            "description": "archive:// addresses of the tool results that show the findings",
        },
    },
    "required": ["summary", "findings"],
    "additionalProperties": False,
}
"""What a child answers when its ``delegate`` call names no ``output_schema``."""


class DelegateArgs(BaseModel):
    """The ``delegate`` tool's arguments (also what ``Harness.delegate`` takes)."""

    model_config = ConfigDict(extra="forbid")

    goal: str = Field(
        min_length=1,
        max_length=4000,
        description="What the sub-agent must find out or do, and what to report back.",
    )
    tools: list[str] = Field(
        default_factory=list,
        description="Tools it may use: names or shell-style patterns (find_*) from your own "
        "tools. It always has update_task_notes, recall and search_archive.",
    )
    max_turns: int | None = Field(
        None, ge=1, description="Most turns it may take (default and cap: the configured)."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="Most tokens it may spend (default and cap: the configured)."
    )
    output_schema: dict[str, Any] | None = Field(
        None,
        description="JSON Schema its final answer must match; default: the handoff schema "
        "(summary, findings, decisions, world_changes, verification, unresolved, evidence).",
    )


@dataclass(frozen=True)
class Contract:
    """What one child is asked to do, with what, within which budgets."""

    goal: str
    tools: tuple[str, ...] = ()
    max_turns: int = 20
    max_tokens: int = 200_000
    output_schema: Mapping[str, Any] | None = None

    @property
    def schema(self) -> Mapping[str, Any]:
        return self.output_schema if self.output_schema is not None else HANDOFF_SCHEMA


class SubagentRefused(Exception):
    """The child cannot start (an unknown window, tools that match nothing, a bad schema);
    the message is written for whoever asked for it."""

    def __init__(self, message: str, *, bad_arguments: bool = False) -> None:
        super().__init__(message)
        self.bad_arguments = bad_arguments


def contract_of(session: Session, args: DelegateArgs) -> Contract:
    """The contract of a ``delegate`` call, its budgets capped by the configuration."""
    cfg = session.config.subagents
    schema = args.output_schema
    if schema is not None:
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise SubagentRefused(
                f"output_schema is not a valid JSON Schema: {exc.message}", bad_arguments=True
            ) from None
    return Contract(
        goal=args.goal.strip(),
        tools=tuple(args.tools),
        max_turns=min(args.max_turns or cfg.max_turns, cfg.max_turns),
        max_tokens=min(args.max_tokens or cfg.max_tokens, cfg.max_tokens),
        output_schema=schema,
    )


@dataclass
class Narrowed:
    """A child's tools: what it may call, and what it asked for but may not have."""

    tools: ToolRegistry
    withheld: dict[str, str] = field(default_factory=dict)


def narrow_tools(
    available: ToolRegistry, requested: Sequence[str], *, physical_allowed: bool
) -> Narrowed:
    """The child's registry: the requested tools (in the parent's order, so definitions
    stay stable), the bookkeeping built-ins, never ``delegate`` itself (no grandchildren).
    A physical tool is withheld unless ``physical_allowed``. A pattern that matches none
    of ``available``'s tools is refused, naming what there is."""
    offered = [t for t in available.visible() if t.name != DELEGATE_TOOL]
    wanted: set[str] = {name for name in BOOKKEEPING_TOOLS if name in available}
    unmatched = []
    for pattern in requested:
        matches = [t.name for t in offered if fnmatchcase(t.name, pattern)]
        if not matches:
            unmatched.append(pattern)
        wanted.update(matches)
    if unmatched:
        names = ", ".join(t.name for t in offered)
        raise SubagentRefused(
            f"no tool matches {', '.join(map(repr, unmatched))}; the tools that can be "
            f"delegated are: {names}",
            bad_arguments=True,
        )
    narrowed = Narrowed(ToolRegistry())
    for item in offered:
        if item.name not in wanted:
            continue
        if item.physical and not physical_allowed:
            narrowed.withheld[item.name] = (
                "it moves hardware, and sub-agents may not (subagents.physical is false); "
                "report what should be done instead"
            )
            continue
        narrowed.tools.add(item)
    return narrowed

"""The offline planner: a deterministic stand-in for a language model that reads only what a
model would see: the instruction, the Brief and the tool declarations and results (see
:mod:`harness.planner.policy`). It names no world: what it does follows from the tools it is
offered and the objects the Brief shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodiment.lazy_names import lazy_names

if TYPE_CHECKING:
    from harness.planner.brief import BriefObject, ParsedBrief, parse_brief
    from harness.planner.grammar import GRAMMAR_HELP, Goal, parse_instruction
    from harness.planner.policy import MAX_GRASP_ATTEMPTS, Planner

_HOMES = {
    "BriefObject": "harness.planner.brief",
    "ParsedBrief": "harness.planner.brief",
    "parse_brief": "harness.planner.brief",
    "GRAMMAR_HELP": "harness.planner.grammar",
    "Goal": "harness.planner.grammar",
    "parse_instruction": "harness.planner.grammar",
    "MAX_GRASP_ATTEMPTS": "harness.planner.policy",
    "Planner": "harness.planner.policy",
}
"""Where each name lives: imported on first use, so the task check, which reads an
instruction with :mod:`harness.planner.grammar` alone, does not load the planner's policy
and the scene graph (networkx) into every process that builds a Harness."""

__all__ = [
    "GRAMMAR_HELP",
    "MAX_GRASP_ATTEMPTS",
    "BriefObject",
    "Goal",
    "ParsedBrief",
    "Planner",
    "parse_brief",
    "parse_instruction",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)

"""The offline planner: a deterministic stand-in for a language model that reads only what a
model would see: the instruction, the Brief and the tool declarations and results (see
:mod:`harness.planner.policy`). It names no world: what it does follows from the tools it is
offered and the objects the Brief shows."""

from harness.planner.brief import BriefObject, ParsedBrief, parse_brief
from harness.planner.grammar import GRAMMAR_HELP, Goal, parse_instruction
from harness.planner.policy import MAX_GRASP_ATTEMPTS, Planner

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

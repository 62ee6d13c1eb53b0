"""The benchmark trace as a model using the episode tools would run it (``episodes``).

The same seeded session (:mod:`benchmarks.lib.session_trace`), with the bookkeeping turns a
model adds when it marks the structure of its work: ``begin_episode`` before a span,
``end_episode`` after it (an exploration concludes with the first line of its last
output), and ``condense_context`` after every :data:`CONDENSE_EVERY` completed actions.
A span is at least :data:`MIN_SPAN` tool turns of one kind (reads and looks are an
exploration; pick, place and move_to an action) and ends where the kind changes; an
action depends on the exploration before it. Every other turn, output and fact is the
original's, renumbered: facts keep their original plant and probe turns, so the
``episodes`` row pays for the extra requests and is judged on the same facts.
"""

from __future__ import annotations

from typing import Any

from benchmarks.lib.session_trace import PHYSICAL_TOOLS, Trace, TraceTask, TraceTurn

__all__ = ["CONDENSE_EVERY", "MIN_SPAN", "EpisodeMarks", "mark_episodes"]

MIN_SPAN = 16
CONDENSE_EVERY = 3
CONCLUSION_CHARS = 200


class EpisodeMarks:
    """How many bookkeeping turns the marked trace added, by tool."""

    def __init__(self) -> None:
        self.added: dict[str, int] = {}

    def count(self, tool: str) -> None:
        self.added[tool] = self.added.get(tool, 0) + 1

    def describe(self) -> str:
        return ", ".join(f"{n} {tool}" for tool, n in self.added.items()) or "none"


def _kind(turn: TraceTurn) -> str:
    return "action" if turn.tool in PHYSICAL_TOOLS else "exploration"


def mark_episodes(
    trace: Trace, *, min_span: int = MIN_SPAN, condense_every: int = CONDENSE_EVERY
) -> tuple[Trace, EpisodeMarks]:
    """The marked trace and what it added (see the module docstring); ``min_span`` and
    ``condense_every`` replace :data:`MIN_SPAN` and :data:`CONDENSE_EVERY` (the property
    tests vary the episode boundaries with them)."""
    marks = EpisodeMarks()
    turns: list[TraceTurn] = []
    renumber: dict[int, int] = {}
    tasks: list[TraceTask] = []
    serial = 0

    def add(template: TraceTurn, tool: str, arguments: dict[str, Any], text: str) -> None:
        marks.count(tool)
        turns.append(
            template.model_copy(
                update={
                    "turn": len(turns) + 1,
                    "text": text,
                    "tool": tool,
                    "arguments": arguments,
                    "output": "",
                    "is_error": False,
                }
            )
        )

    for task in trace.tasks:
        first = len(turns) + 1
        active: tuple[str, str] | None = None
        length = 0
        explored = ""
        actions_since = 0
        for number in range(task.first_turn, task.last_turn + 1):
            turn = trace.at(number)
            kind = _kind(turn) if turn.tool is not None else ""
            if active is not None and ((kind != active[0] and length >= min_span) or not kind):
                name = active[1]
                last = turns[-1].output.splitlines()[0] if turns[-1].output else "done"
                add(
                    turn,
                    "end_episode",
                    {"name": name, "conclusion": last[:CONCLUSION_CHARS]},
                    f"{name} done.",
                )
                if active[0] == "exploration":
                    explored = name
                else:
                    actions_since += 1
                active = None
                if actions_since >= condense_every and kind:
                    actions_since = 0
                    add(
                        turn,
                        "condense_context",
                        {"completed_work": [f"finished up to turn {number - 1} of the trace"]},
                        "Milestone: condensing.",
                    )
            if active is None and kind:
                serial += 1
                wanted = kind if kind == "exploration" or explored else "exploration"
                name = f"{wanted[0]}{serial}"
                arguments: dict[str, Any] = {"kind": wanted, "name": name}
                if wanted == "action":
                    arguments["depends_on"] = [explored]
                add(turn, "begin_episode", arguments, f"Beginning {wanted} {name}.")
                active, length = (wanted, name), 0
            renumber[number] = len(turns) + 1
            turns.append(turn.model_copy(update={"turn": len(turns) + 1}))
            length += 1
        tasks.append(task.model_copy(update={"first_turn": first, "last_turn": len(turns)}))
    facts = [
        fact.model_copy(
            update={
                "plant_turn": renumber[fact.plant_turn],
                "probe_turn": renumber[fact.probe_turn],
            }
        )
        for fact in trace.facts
    ]
    marked = Trace(
        spec=trace.spec,
        instruction=trace.instruction,
        profile_text=trace.profile_text,
        turns=turns,
        facts=facts,
        tasks=tasks,
    )
    return marked, marks

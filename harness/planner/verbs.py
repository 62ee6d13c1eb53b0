"""The verbs of manipulation the parser knows, by the action each asks for.

General English only, as any language model reads it: "grab" and "take" pick, "set" and
"drop" place, "shut" closes. A verb may come as its "-ing" form ("would you mind putting
...", "after opening it"); :func:`verb_of_gerund` finds the verb it is of.
"""

from __future__ import annotations

import re

__all__ = [
    "CLOSE",
    "NEUTRAL_MOVES",
    "OFF",
    "ON",
    "OPEN",
    "PICK",
    "PLACE",
    "PUSH",
    "TURN",
    "VERB",
    "verb_of_gerund",
]

PICK = r"(?:pick up|pick|lift up|lift|take out|take|grab|get|grasp|remove|collect)"
PLACE = (
    r"(?:put down|put|place|set down|set|move|drop|insert|add|transfer|stack|bring|lay|"
    r"position|carry|load|store|return|deposit|relocate|stick|pop)"
)
OPEN = r"(?:slide open|pull open|swing open|slide out|pull out|open up|open|pull)"
CLOSE = r"(?:slide shut|push shut|push closed|close up|close|shut)"
ON = r"(?:turn on|switch on|power on|ignite|light up|light|start|activate)"
OFF = r"(?:turn off|switch off|power off|extinguish|deactivate)"
TURN = r"(?:turn|switch|power)"
PUSH = r"(?:push|slide|shove|nudge|shift)"
NEUTRAL_MOVES = frozenset({"move", "relocate", "position"})
"""Place verbs that say neither carrying nor sliding: the parser reads the way from the
destination ("move the plate to the front of the stove" pushes)."""
VERB = rf"(?:{PICK}|{PLACE}|{OPEN}|{CLOSE}|{ON}|{OFF}|{TURN}|{PUSH})"

_FIRST_VERB = re.compile(rf"^{VERB}$")


def verb_of_gerund(word: str) -> str | None:
    """The verb ``word`` is the "-ing" form of ("putting" is "put", "moving" "move",
    "opening" "open"), or None when it is of no verb here. Each spelling rule is tried
    and kept only when it gives a known verb, so no rule has to be right for every word."""
    if not word.endswith("ing") or len(word) < 5:
        return None
    stem = word[:-3]
    for base in (stem, f"{stem}e", stem[:-1]):
        if _FIRST_VERB.match(base):
            return base
    return None

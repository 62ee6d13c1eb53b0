"""The envelope as a list of rule objects decides exactly as the envelope of mixins did.

``tests/fixtures/envelope_golden.jsonl.gz`` holds 4,500 decisions (1,500 seeded random calls
of every safety kind on each of the tabletop, LIBERO and mobile profiles; see
:mod:`tests.envelope_golden`) recorded from the envelope before it was refactored into
rule objects. Every one must come out the same today: outcome, admitted arguments,
violations and reason, character for character.
"""

from __future__ import annotations

from collections import Counter

from tests.envelope_golden import CALLS_PER_PROFILE, PROFILES, decisions, dumps, read


def test_every_recorded_decision_is_made_again_word_for_word() -> None:
    golden = read()
    assert len(golden) == CALLS_PER_PROFILE * len(PROFILES)
    differences = []
    count = 0
    for (call, decision), recorded in zip(decisions(), golden, strict=True):
        count += 1
        assert call == recorded["call"], "the drawn calls changed: re-record with care"
        if dumps(decision) != dumps(recorded["decision"]):
            differences.append((call, recorded["decision"], decision))
    assert count == len(golden)
    assert not differences, (
        f"{len(differences)} of {count} decisions differ; first: {differences[0]}"
    )


def test_the_record_covers_every_outcome_on_every_profile() -> None:
    """Guards the record itself: a generator that only drew blocked calls would prove little."""
    seen: Counter[tuple[str, str]] = Counter()
    for entry in read():
        world = entry["call"]  # the call is stored as its JSON text
        name = next(w for w in PROFILES if f'"world": "{w}"' in world)
        seen[name, entry["decision"]["outcome"]] += 1
    for world in PROFILES:
        for outcome in ("allow", "clamp", "block"):
            assert seen[world, outcome] >= 30, (world, outcome, seen)

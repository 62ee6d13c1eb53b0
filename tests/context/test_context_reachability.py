"""No output ever becomes unreachable: a property over whole replayed sessions.

Seeded traces (:mod:`benchmarks.lib.session_trace`) of varied length, task count and window
run through the real Harness, with and without the episode tools (episode boundaries
drawn too: :func:`benchmarks.lib.episode_trace.mark_episodes`), and with a summarizer that
fails on a drawn share of its calls and writes all, some or none of the addresses. At
every request, every tool output recorded so far must be readable by the model: its exact
text in the request, or its ``archive://`` address in the request or in an archived text
that at most :data:`RECALLS` ``recall`` calls of addresses found that way lead to (the
checkpoint's index pages, an episode record, the pinned summary's list). Every output must
also stay in the archive exactly and be found by ``search_archive``.

The oracle reads only the requests the model received and the run store's archive; it
does not use the context code under test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.context_efficiency import EPISODE_SETTINGS
from benchmarks.lib.episode_trace import mark_episodes
from benchmarks.lib.metering import RequestMeter, request_text
from benchmarks.lib.ours import OursRun, ours_config, run_ours
from benchmarks.lib.session_trace import Trace, TraceSpec
from benchmarks.lib.summarizer import DeterministicSummarizer
from benchmarks.lib.trace_generator import generate_trace
from harness.tokens import TokenEstimator
from tests.tiers import examples

pytestmark = pytest.mark.long

RECALLS = 2
"""Archived texts the model may read before it knows an output's address (the harness's
promise: any folded exchange is two ``recall`` calls away)."""
ADDRESS = re.compile(r"archive://[A-Za-z0-9_.:/-]+[A-Za-z0-9_]")
CALL = re.compile(r"/call_(\d+)$")
TRIES = {"examples": 0, "episodes": 0, "requests": 0, "outputs_checked": 0, "by_address": 0}


@dataclass(frozen=True)
class Session:
    seed: int
    turns: int
    tasks: int
    window: int
    failure_rate: float
    addresses: str
    episodes: bool
    min_span: int
    condense_every: int


def replay(session: Session) -> tuple[Trace, OursRun]:
    trace = generate_trace(
        TraceSpec(
            turns=session.turns,
            facts=min(12, session.turns // 8),
            seed=session.seed,
            tasks=session.tasks,
        )
    )
    overrides: list[str] = ["context.episodes.enabled=false"]
    if session.episodes:
        trace, _ = mark_episodes(
            trace, min_span=session.min_span, condense_every=session.condense_every
        )
        overrides = list(EPISODE_SETTINGS)
    config = ours_config(
        trace, window=session.window, reserve=session.window // 6, overrides=overrides
    )
    estimator = TokenEstimator(image_cost="openai")
    summarizer = DeterministicSummarizer(
        estimator=estimator,
        max_tokens=1500,
        failure_rate=session.failure_rate,
        seed=session.seed,
        keep_addresses=session.addresses,  # type: ignore[arg-type]
    )
    run = run_ours(trace, config=config, meter=RequestMeter(estimator), summarizer=summarizer)
    return trace, run


def reachable(text: str, read: dict[str, str], named: dict[str, list[str]]) -> set[str]:
    """Addresses known from ``text`` and from the texts at most :data:`RECALLS` recalls of
    them return. ``named``: the addresses each archived text names, filled as they are
    read (the archive does not change while one run is checked; every request reads many
    of the same texts)."""
    known = set(ADDRESS.findall(text))
    frontier = set(known)
    for _ in range(RECALLS):
        found: set[str] = set()
        for address in frontier:
            addresses = named.get(address)
            if addresses is None:
                addresses = named[address] = ADDRESS.findall(read.get(address, ""))
            found.update(addresses)
        frontier = found - known
        known |= found
    return known


def unreachable_outputs(run: OursRun) -> list[str]:
    """Every (request, output) where the output could not be read; [] when none."""
    assert run.store is not None
    archive = dict(run.store.archive)
    outputs = sorted(
        (int(match.group(1)), address)
        for address in archive
        if (match := CALL.search(address)) is not None
    )
    problems: list[str] = []
    named: dict[str, list[str]] = {}
    for index, request in enumerate(run.run.requests):
        turn = index + 1  # request n is sent at trace turn n; outputs of turns < n exist
        text = request_text(request)
        known = reachable(text, archive, named)
        TRIES["requests"] += 1
        for output_turn, address in outputs:
            if output_turn >= turn:
                break
            TRIES["outputs_checked"] += 1
            if address in known:
                TRIES["by_address"] += 1
                continue
            body = archive[address]
            if body and body in text:
                continue
            problems.append(f"request {turn}: the output of turn {output_turn} ({address})")
    return problems


sessions = st.builds(
    Session,
    seed=st.integers(0, 10_000),
    turns=st.integers(60, 200),
    tasks=st.integers(1, 3),
    window=st.sampled_from([12_000, 16_000, 24_000]),
    failure_rate=st.sampled_from([0.0, 0.2, 0.5, 1.0]),
    addresses=st.sampled_from(["cut", "none", "all"]),
    episodes=st.booleans(),
    min_span=st.integers(2, 20),
    condense_every=st.integers(1, 4),
)


@settings(
    max_examples=examples(24),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(session=sessions)
def test_no_output_ever_becomes_unreachable(session: Session) -> None:
    TRIES["examples"] += 1
    TRIES["episodes"] += int(session.episodes)
    trace, run = replay(session)
    assert run.done is not None and run.done.status == "completed", run.run.reason
    assert len(run.run.requests) == run.run.planned_requests
    problems = unreachable_outputs(run)
    assert not problems, f"{len(problems)} unreachable, first: {problems[:3]}"
    # search_archive finds every planted fact (a unique string) at its exact output (among
    # archived Task Notes snapshots and lists that quote a headline fact too).
    store = run.store
    assert store is not None
    (session_id,) = store.sessions
    for fact in trace.facts:
        hits = store.archive_search(session_id, fact.key, limit=500)
        planted = [h.address for h in hits if h.address.endswith(f"/call_{fact.plant_turn:04d}")]
        assert planted, f"search_archive does not find {fact.id} ({fact.key!r})"


def test_the_property_run_covered_both_modes() -> None:
    """Run after the property above: both modes and many requests were checked."""
    if TRIES["examples"] == 0:  # run alone
        return
    assert 0 < TRIES["episodes"] < TRIES["examples"]
    assert TRIES["by_address"] > TRIES["outputs_checked"] // 4

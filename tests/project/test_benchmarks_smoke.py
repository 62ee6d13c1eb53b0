"""The benchmarks keep working: each runs on a tiny trace, and its numbers add up.

Nothing here checks a timing. What is checked: the trace is deterministic and its facts
are unique; every policy's metrics are internally consistent (cache shares, costs, fact
counts); the baselines never break a tool call/result pair or the Resident prefix, even
with a failing summarizer; the metric detectors really detect violations; the real
Harness replay sends exactly what the meter measures (meter == prompt_snapshot), the
same prefix the baselines use, and one camera image per request at most.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks import context_efficiency, turn_overhead
from benchmarks.context_efficiency import EfficiencyOptions, run_benchmark
from benchmarks.lib.metering import RequestMeter, request_text
from benchmarks.lib.metrics import FAILED_SUMMARY, PolicyRun, measure, recalls_to
from benchmarks.lib.ours import OURS
from benchmarks.lib.overhead_modes import OverheadOptions, run_mode, summarize_mode
from benchmarks.lib.policies import BASELINES
from benchmarks.lib.replay import reference_prefix
from benchmarks.lib.session_trace import TraceSpec
from benchmarks.lib.summarizer import (
    SECTIONS,
    DeterministicSummarizer,
    SummaryFailedError,
    records_from_prompt,
)
from benchmarks.lib.trace_generator import generate_trace
from harness.context import bounded_text
from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    SystemBlock,
    ToolCall,
    ToolResultItem,
)
from harness.tokens import TokenEstimator
from tests.tiers import examples

pytestmark = pytest.mark.long

TINY = EfficiencyOptions(
    turns=30, facts=9, window=16_000, reserve=2_000, summary_failure_rate=0.5, seed=3
)


@pytest.fixture(scope="module")
def results() -> context_efficiency.EfficiencyResults:
    return run_benchmark(TINY)


# --------------------------------------------------------------------------- trace


def test_trace_is_deterministic_and_every_fact_is_unique_and_probed_later() -> None:
    spec = TraceSpec(turns=40, facts=12, seed=7)
    trace = generate_trace(spec)
    assert trace == generate_trace(spec)
    assert trace != generate_trace(spec.model_copy(update={"seed": 8}))
    assert len(trace.turns) == 41 and trace.turns[-1].tool is None
    assert len(trace.facts) == 12
    everything = "\n".join(
        "\n".join([t.output, t.brief, t.text, json.dumps(t.arguments)]) for t in trace.turns
    )
    for fact in trace.facts:
        assert everything.count(fact.key) == 1, fact
        assert fact.key in trace.at(fact.plant_turn).output
        assert fact.plant_turn < fact.probe_turn <= len(trace.turns)
        if fact.placement == "headline":
            assert trace.at(fact.plant_turn).output.split("\n")[0].count(fact.key) == 1


# --------------------------------------------------------------------------- summarizer


def test_summarizer_writes_the_sectioned_note_and_carries_it_forward_within_budget() -> None:
    summarizer = DeterministicSummarizer(estimator=TokenEstimator(), max_tokens=90)
    first = summarizer.summarize(
        [
            "instruction: sort the parts\nby colour",
            "pick result: pick red_cube_1: grasped\nbody line E1234-AB",
            "place result: place x: failed, slipped",
            "assistant: narration is not summarized -> look {}",
        ]
    )
    assert [line for line in first.splitlines() if line.startswith("## ")] == [
        f"## {name}" for name in SECTIONS
    ]
    assert "pick red_cube_1: grasped" in first and "E1234-AB" not in first
    assert "failed, slipped" in first.split("## Failures")[1]
    assert "narration" not in first
    cut, _ = bounded_text("log\n" + "x" * 3000, 400, address="archive://task_1/call_2")
    second = summarizer.summarize([first, f"read_force_log result: {cut}"])
    assert "pick red_cube_1" in second and "archive://task_1/call_2" in second
    long = summarizer.summarize([second, *(f"look result: view {i}\nbody" for i in range(99))])
    assert TokenEstimator().text(long) <= 90
    assert "view 98" in long and "view 0\n" not in long
    assert "instruction: sort the parts" in long  # the objective is dropped last


def test_summarizer_reads_the_harness_summarize_prompt() -> None:
    cut = "[... 900 of 3000 characters cut; exact original: recall(address='archive://t_1/c5') ...]"
    prompt = (
        "Earlier handoff note (it covers everything before the history below):\n<<<\n"
        "[Checkpoint of turns 1-3]\n## Instructions\n- session: sort the parts\n"
        "## Tool exchanges\n- session t2 look({}) -> ok: seen; archive://t_1/c2\n>>>"
        "\n\nHistory to fold into the note (the whole span, oldest first):\n<<<\n"
        "[t_1 t4] MODEL: Picking.\n[t_1 t4] CALL pick (call c4) {}\n"
        "[t_1 t4] RESULT of pick (call c4; archive=archive://t_1/c4):\n"
        "pick red_cube_1: grasped\nforce 12 N\n[t_1 t4] TASK NOTES v3:\nTask Notes\n"
        f"[t_1 t5] RESULT of read_force_log (call c5; archive=archive://t_1/c5):\nlog\n{cut}\n>>>"
    )
    records = records_from_prompt(prompt)
    assert records[0].startswith("[Checkpoint of turns 1-3]")
    assert records[1] == (
        "pick result: pick red_cube_1: grasped\nforce 12 N\n(exact output: archive://t_1/c4)"
    )
    assert records[2].startswith("read_force_log result: log")
    assert len(records) == 3
    note = DeterministicSummarizer(estimator=TokenEstimator()).summarize(records)
    objective, rest = note.split("## Progress")
    assert "sort the parts" in objective
    assert "look({}) -> ok: seen; archive://t_1/c2" in rest  # earlier bullets carried
    assert "archive://t_1/c5" in rest.split("## Evidence")[1]  # the cut output's address
    assert "archive://t_1/c4" not in note  # short outputs are in the note itself
    every = DeterministicSummarizer(estimator=TokenEstimator(), keep_addresses="all")
    assert "archive://t_1/c4" in every.summarize(records)


def test_summarizer_failures_follow_the_seeded_schedule() -> None:
    def schedule(seed: int) -> list[bool]:
        s = DeterministicSummarizer(estimator=TokenEstimator(), failure_rate=0.5, seed=seed)
        outcomes = []
        for _ in range(40):
            try:
                s.summarize(["x"])
                outcomes.append(True)
            except SummaryFailedError:
                outcomes.append(False)
        return outcomes

    assert schedule(1) == schedule(1)
    assert 5 < schedule(1).count(False) < 35


# --------------------------------------------------------------------------- metrics


def _request(items: list, system: str = "sys") -> ModelRequest:
    return ModelRequest(system=[SystemBlock(name="system", text=system)], items=items)


def test_measure_detects_orphans_resident_changes_and_rewrites_after_failed_summaries() -> None:
    trace = generate_trace(TraceSpec(turns=4, facts=0))
    meter = RequestMeter(TokenEstimator())
    instruction = InstructionItem(text="do it")
    call = AssistantItem(tool_calls=[ToolCall(id="c1", name="look")])
    result = ToolResultItem(call_id="c1", name="look", text="seen")
    orphan = ToolResultItem(call_id="c9", name="look", text="nobody asked")
    run = PolicyRun(
        name="broken",
        source="test",
        planned_requests=5,
        requests=[
            _request([instruction]),
            _request([instruction, call, result]),
            _request([call, result], system="changed"),  # resident changed + unexplained
            _request([result, orphan]),  # rewritten after a failed summary; orphans
            _request([result, orphan, call]),  # orphan call and orphan result
        ],
        actions=[[], [], [], [FAILED_SUMMARY], []],
    )
    metrics = measure(run, trace, meter, window=10_000)
    v = metrics.violations
    assert v.resident_changed == 1
    assert v.unexplained_rewrite == 1
    assert v.failed_summary_altered_context == 1
    assert v.orphan_tool_items == 2
    assert metrics.violations_total == 5
    clean = measure(
        PolicyRun(
            name="clean",
            source="test",
            planned_requests=2,
            requests=[_request([instruction]), _request([instruction, call, result])],
            actions=[[], []],
        ),
        trace,
        meter,
        window=10_000,
    )
    assert clean.violations_total == 0
    assert clean.cached_tokens == meter.total(_request([instruction]))


def test_every_policy_reports_consistent_numbers(
    results: context_efficiency.EfficiencyResults,
) -> None:
    by_policy = results.by_policy()
    assert list(by_policy) == [*BASELINES, OURS]
    facts = len(results.trace.facts)
    for m in results.metrics:
        assert m.requests == len(m.request_tokens) <= m.planned_requests == TINY.turns + 1
        assert m.input_tokens == sum(m.request_tokens)
        assert m.peak_request_tokens == max(m.request_tokens)
        assert m.cached_tokens + m.cache_write_tokens + m.uncached_tokens == m.input_tokens
        assert 0 <= m.prefix_share <= 1
        low = 0.1 * m.input_tokens + m.summarizer_input_tokens
        high = 1.25 * m.input_tokens + m.summarizer_input_tokens
        assert low <= m.effective_cost <= high
        assert m.facts.verbatim + m.facts.recoverable + m.facts.lost == facts
        assert m.overflow_requests == sum(t > TINY.window for t in m.request_tokens)
    full = by_policy["full"]
    assert full.facts.verbatim == facts and full.compactions == 0
    assert full.summarizer_calls == 0 and full.overflow_requests > 0
    for name in ("truncate", "masking"):
        assert by_policy[name].input_tokens < full.input_tokens
    threshold = TINY.window - TINY.reserve
    assert by_policy["truncate"].peak_request_tokens <= threshold


def test_baselines_never_violate_invariants_even_when_summaries_fail(
    results: context_efficiency.EfficiencyResults,
) -> None:
    by_policy = results.by_policy()
    for name in BASELINES:
        assert by_policy[name].violations_total == 0, by_policy[name].violations
    for name in ("summarize_half", "brief_in_system"):
        m = by_policy[name]
        assert m.summarizer_calls > 0 and m.compactions > 0
    failures = sum(by_policy[n].summarizer_failures for n in ("summarize_half", "brief_in_system"))
    assert failures > 0, "pick a seed whose schedule makes the baselines face a failure"


def test_ours_is_measured_from_what_the_harness_really_sent(
    results: context_efficiency.EfficiencyResults,
) -> None:
    ours = results.ours
    assert ours is not None
    assert results.snapshot_mismatches == 0
    assert len(ours.snapshots) == len(ours.run.requests) > 0
    first = ours.run.requests[0]
    config = context_efficiency.ours_config(
        results.trace,
        window=TINY.window,
        reserve=TINY.reserve,
        overrides=[context_efficiency.NO_EPISODE_TOOLS],
    )
    prefix = reference_prefix(results.trace, config)
    # the baselines get the default's tools without the episode tools (ours offers those
    # in its first task, and later only while they pay: EpisodeLedger)
    episode_tools = {"begin_episode", "end_episode", "condense_context"}
    assert first.system == prefix.system
    assert [t for t in first.tools if t.name not in episode_tools] == prefix.tools
    for request in ours.run.requests:
        assert request.refreshed is not None and len(request.refreshed.images) == 1
    assert results.trace.instruction in request_text(first)
    metrics = results.by_policy()[OURS]
    if ours.real_compactor:
        assert metrics.status == "completed"
        assert metrics.requests == metrics.planned_requests
        assert metrics.violations_total == 0, metrics.violations
        assert metrics.overflow_requests == 0
    else:
        assert metrics.status in ("completed", "failed")
        if metrics.status == "failed":
            assert "context budget" in metrics.reason
        assert metrics.violations_total == 0


DEEP_SEARCH = int(os.environ.get("HARNESS_PROPERTY_EXAMPLES", "0"))
"""As in the compaction properties: deterministic examples by default, a randomised search
of this many examples when set."""


@settings(
    max_examples=DEEP_SEARCH or examples(6),
    derandomize=not DEEP_SEARCH,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@example(seed=897, turns=9, window=6_000, failure_rate=0.0)  # a tail of every turn since
# the last checkpoint left brief_in_system nothing to fold
@given(
    seed=st.integers(0, 10_000),
    turns=st.integers(8, 40),
    window=st.sampled_from([6_000, 12_000, 24_000]),
    failure_rate=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_baselines_keep_pairs_resident_and_counts_on_any_trace(
    seed: int, turns: int, window: int, failure_rate: float
) -> None:
    options = EfficiencyOptions(
        turns=turns,
        facts=min(6, turns),
        seed=seed,
        window=window,
        reserve=window // 8,
        summary_failure_rate=failure_rate,
        policies=list(BASELINES),
    )
    results = run_benchmark(options)
    for m in results.metrics:
        assert m.violations_total == 0, (m.policy, m.violations)
        assert m.requests == turns + 1
        assert m.facts.verbatim + m.facts.recoverable + m.facts.lost == len(results.trace.facts)
        if failure_rate == 1.0:
            assert m.compactions == 0 or m.policy in ("truncate", "masking")


def test_context_efficiency_command_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    code = context_efficiency.main(
        [
            "--turns",
            "12",
            "--facts",
            "3",
            "--window",
            "12000",
            "--reserve",
            "1500",
            "--policies",
            "full,truncate,ours",
            "--out",
            str(tmp_path),
            "--no-plot",
        ]
    )
    assert code == 0
    data = json.loads((tmp_path / "context_efficiency.json").read_text())
    assert [m["policy"] for m in data["metrics"]] == ["full", "truncate", "ours"]
    assert context_efficiency.main(["--policies", "nope", "--out", str(tmp_path)]) == 2


# --------------------------------------------------------------------------- turn overhead


def test_turn_overhead_measures_every_turn_and_keeps_one_image_per_request() -> None:
    options = OverheadOptions(histories=(10, 20), window=12_000, reserve=1_500, subprocess=False)
    result = run_mode(options, "no_compaction")
    assert result.status == "completed" and result.turns_run == 21
    assert len(result.overhead_s) == 20
    assert all(value >= 0 for value in result.overhead_s)
    assert result.images_in_context == 1
    assert result.image_bytes_seen > 0
    assert result.request_tokens == sorted(result.request_tokens)  # nothing is ever folded
    points = summarize_mode(result, options.histories)
    assert [p.history for p in points] == [10, 20]
    assert points[0].growth == 1.0 and points[0].p95_ms >= points[0].median_ms
    compacted = run_mode(options, "compaction")
    if compacted.skipped:
        assert "NoCompaction" in compacted.skipped
    else:
        assert compacted.status == "completed" and compacted.compactions > 0
        assert max(compacted.request_tokens) <= options.window
        assert compacted.images_in_context == 1


def test_turn_overhead_command_runs_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = turn_overhead.main(
        [
            "--histories",
            "5,10",
            "--in-process",
            "--sim-turns",
            "0",
            "--out",
            str(tmp_path),
            "--no-plot",
        ]
    )
    assert code == 0
    assert "median ms/turn" in capsys.readouterr().out
    data = json.loads((tmp_path / "turn_overhead.json").read_text())
    assert data["modes"]["no_compaction"]["turns_run"] == 11
    assert turn_overhead.main(["--histories", "1", "--out", str(tmp_path)]) == 2


def test_turn_overhead_runs_on_the_sqlite_store() -> None:
    options = OverheadOptions(histories=(5, 10), store="sqlite", subprocess=False)
    result = run_mode(options, "no_compaction")
    assert result.status == "completed" and len(result.overhead_s) == 10
    assert result.images_in_context == 1


def test_cancel_latency_benchmark_runs_every_phase_it_is_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import cancel_latency

    phases = "model call (blocking),tool ignoring,physical"
    assert cancel_latency.main(["--repeats", "1", "--block", "1", "--phases", phases]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 3  # header + one row per phase
    assert all("cancelled" in row for row in rows[1:])


# --------------------------------------------------------------------------- issue 17


def test_a_multi_task_trace_gives_each_task_an_instruction_and_a_final_report() -> None:
    spec = TraceSpec(turns=60, facts=12, seed=5, tasks=3)
    trace = generate_trace(spec)
    assert trace == generate_trace(spec)
    assert [t.turns for t in trace.tasks] == [21, 21, 21]
    assert len({t.instruction for t in trace.tasks}) == 3
    for task in trace.tasks:
        assert trace.at(task.last_turn).tool is None
        assert all(trace.at(t).tool for t in range(task.first_turn, task.last_turn))
    # facts sit in tool outputs; some are asked for in a later task than the one that saw them
    task_of = {t: task for task in trace.tasks for t in range(task.first_turn, task.last_turn + 1)}
    assert all(trace.at(fact.plant_turn).tool for fact in trace.facts)
    assert any(task_of[f.plant_turn] != task_of[f.probe_turn] for f in trace.facts)
    # a single task is the trace it always was
    single = generate_trace(TraceSpec(turns=40, facts=12, seed=7))
    assert [t.turns for t in single.tasks] == [41] and single.instruction == single.tasks[
        0
    ].instruction


def test_a_summarizer_without_addresses_writes_none_even_from_an_earlier_note() -> None:
    summarizer = DeterministicSummarizer(estimator=TokenEstimator(), keep_addresses="none")
    cut, _ = bounded_text("log\n" + "x" * 3000, 400, address="archive://task_1/call_2")
    earlier = "## Progress\n- look ok; archive://task_1/call_1"
    note = summarizer.summarize([earlier, f"read_force_log result: {cut}"])
    assert "archive://" not in note and "look ok" in note


def test_a_fact_is_reachable_through_at_most_two_index_pages() -> None:
    archive = {
        "archive://t/out": "fault E1234-AB cleared",
        "archive://t/page": "- t1 read(...) -> ok; archive://t/out",
        "archive://t/pages": "- t1-t9 (9): archive://t/page",
        "archive://t/deeper": "- t1-t99: archive://t/pages",
    }
    get = archive.get
    assert recalls_to("E1234-AB", "see archive://t/out", get) == 0
    assert recalls_to("E1234-AB", "index: archive://t/page", get) == 1
    assert recalls_to("E1234-AB", "index: archive://t/pages", get) == 2
    assert recalls_to("E1234-AB", "index: archive://t/deeper", get) is None  # three pages
    assert recalls_to("E9999-ZZ", "index: archive://t/page", get) is None


def test_ours_loses_no_fact_on_a_multi_task_trace_with_a_summarizer_without_addresses() -> None:
    options = EfficiencyOptions(
        turns=80,
        facts=15,
        tasks=3,
        window=12_000,
        reserve=1_500,
        seed=2,
        summary_addresses="none",
        summary_failure_rate=0.3,
    )
    results = run_benchmark(options)
    for m in results.metrics:
        assert m.requests == m.planned_requests == 83
        assert m.facts.verbatim + m.facts.recoverable + m.facts.lost == 15
    ours = results.by_policy()[OURS]
    assert ours.facts.lost == 0 and ours.overflow_requests == 0
    assert ours.violations_total == 0, ours.violations
    assert results.snapshot_mismatches == 0
    assert ours.compactions > 0


def test_the_subagent_benchmark_keeps_the_parent_lean_and_adds_up() -> None:
    from benchmarks.subagents import SearchOptions, run_benchmark, table

    options = SearchOptions(looks=4, chars=1200, after=2, window=32_000, reserve=4_000)
    inline, delegated = run_benchmark(options)
    assert (inline.way, delegated.way) == ("inline", "delegated")
    assert (inline.handoff, delegated.handoff) == ("-", "completed")
    assert inline.child_prompt_tokens == 0 and delegated.child_prompt_tokens > 0
    assert inline.shared_prefix_chars == 0 and delegated.shared_prefix_chars > 0
    assert delegated.parent_last_tokens < inline.parent_last_tokens
    assert inline.model_calls == options.looks + options.after + 1
    assert delegated.model_calls == inline.model_calls + 2  # the delegate call, the answer
    assert "x smaller" in table([inline, delegated], options)


def test_the_episodes_row_pays_for_its_bookkeeping_and_loses_no_fact() -> None:
    """The ``episodes`` variant (issue 18): ``ours`` on the trace with the episode tools'
    turns added; every extra request is counted, and no fact is lost."""
    options = EfficiencyOptions(
        turns=160, facts=15, window=12_000, reserve=1_500, seed=2, policies=["ours", "episodes"]
    )
    results = run_benchmark(options)
    ours, episodes = results.by_policy()["ours"], results.by_policy()["episodes"]
    assert results.episodes is not None and "begin_episode" in results.episode_marks
    assert episodes.requests == episodes.planned_requests > ours.requests
    assert episodes.status == "completed" and episodes.violations_total == 0
    assert episodes.facts.lost == 0
    modes = {(e.mode, e.status) for e in results.episodes.compaction_events}
    assert ("explicit", "completed") in modes and ("eviction", "completed") in modes
    table = context_efficiency.render(results)
    assert "| episodes " in table and "condense_context" in table


def test_a_trace_frame_is_the_same_picture_however_many_were_drawn_before() -> None:
    """Frames start from one gradient computed per trace: drawing frames never changes it
    (a frame of a turn is the same from a fresh trace), and each frame is the caller's."""
    spec = TraceSpec(turns=12, facts=1, seed=5, tasks=1)
    used, fresh = generate_trace(spec), generate_trace(spec)
    drawn = [used.frame(turn) for turn in range(1, 13)]
    drawn[0][:] = 0  # a caller scribbling on its frame
    assert all(frame.flags.writeable for frame in drawn)
    for turn in (1, 6, 12):
        assert (used.frame(turn) == fresh.frame(turn)).all()
    assert not (drawn[3] == drawn[4]).all()  # the squares drift with the turn
    _, height = spec.image_size
    rows = [60 + 80 * r / (height - 1) for r in (0, height - 1)]
    assert [int(fresh.frame(1)[r, 0, 2]) for r in (0, height - 1)] == [int(v * 0.7) for v in rows]

"""Context efficiency of published policies and of this project, side by side, in one run.

    python -m benchmarks.context_efficiency            # 600 turns, 32k window, 4k reserve
    python -m benchmarks.context_efficiency --turns 2000 --window 128000 --reserve 16384
    python -m benchmarks.context_efficiency --tasks 4 --summary-addresses none

Every policy gets the same seeded trace (see :mod:`benchmarks.lib.session_trace`), the same window
and reserve, the same token estimator and the same deterministic summarizer (which fails
on a seeded schedule); see :mod:`benchmarks.lib.policies` for the baselines and their sources,
:mod:`benchmarks.lib.ours` for the real Harness run, :mod:`benchmarks.lib.metrics` for what each
column means. Prints a Markdown table, writes ``benchmarks/out/context_efficiency.json``
and a plot. Ratios are against ``full`` from the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchmarks.lib.episode_trace import mark_episodes
from benchmarks.lib.metering import RequestMeter
from benchmarks.lib.metrics import PolicyMetrics, measure
from benchmarks.lib.ours import OURS, OursRun, ours_config, run_ours
from benchmarks.lib.policies import BASELINES, simulate
from benchmarks.lib.replay import TraceFrames, reference_prefix
from benchmarks.lib.session_trace import Trace, TraceSpec
from benchmarks.lib.summarizer import DeterministicSummarizer
from benchmarks.lib.tables import OUT_DIR, compact_number, markdown_table, save_json, save_plot
from benchmarks.lib.trace_generator import generate_trace
from harness.context import Budget
from harness.messages import ModelRequest
from harness.tokens import ImageCostModel, TokenEstimator

__all__ = ["EfficiencyOptions", "EfficiencyResults", "main", "render", "run_benchmark"]

EPISODES = "episodes"
"""``ours`` on the trace as a model using the episode tools runs it
(:mod:`benchmarks.lib.episode_trace`), with the default deployment's pressure levels."""
EPISODE_SETTINGS = ("context.episodes.enabled=true",)
"""What the ``episodes`` row sets: the tools (on in the default deployment ``ours`` runs
too; there the model never calls them, so from its second task they are not offered)."""
NO_EPISODE_TOOLS = "context.episodes.enabled=false"
"""The baselines' tool definitions: the default's, without the episode tools (the
published policies have none; ``ours`` offers them only while they pay)."""
POLICY_ORDER = (*BASELINES, OURS)
"""What :class:`EfficiencyOptions` runs by default: the same trace for every policy."""
ALL_POLICIES = (*POLICY_ORDER, EPISODES)
"""Everything ``--policies`` accepts, and what the command runs by default: the
``episodes`` row runs on its own marked trace, so it is a variant beside ``ours``."""


@dataclass
class EfficiencyOptions:
    turns: int = 600
    facts: int = 60
    seed: int = 0
    window: int = 32_000
    reserve: int = 4_000
    image_cost: ImageCostModel = "openai"
    summary_tokens: int = 1_500
    summary_failure_rate: float = 0.2
    summary_addresses: Literal["cut", "all", "none"] = "cut"
    tasks: int = 1
    """Tasks in the session (``--tasks``): one instruction and final report each."""
    policies: Sequence[str] = POLICY_ORDER
    overrides: Sequence[str] = ()
    """``key.path=value`` settings for the Harness (``ours``) only."""


@dataclass
class EfficiencyResults:
    options: EfficiencyOptions
    trace: Trace
    metrics: list[PolicyMetrics]
    ours: OursRun | None
    seconds: dict[str, float] = field(default_factory=dict)
    episodes: OursRun | None = None
    episode_marks: str = ""
    """The bookkeeping turns the ``episodes`` trace added."""
    snapshot_mismatches: int = 0
    """Requests whose meter total differs from the Harness's own prompt_snapshot."""
    image_tokens: dict[str, int] = field(default_factory=dict)
    """Per policy: tokens of the camera frames its requests carried (all uncached)."""

    def by_policy(self) -> dict[str, PolicyMetrics]:
        return {m.policy: m for m in self.metrics}


def run_benchmark(options: EfficiencyOptions) -> EfficiencyResults:
    unknown = [p for p in options.policies if p not in ALL_POLICIES]
    if unknown:
        raise ValueError(f"unknown policies {unknown}; expected some of {list(ALL_POLICIES)}")
    budget = _budget(options)
    if options.tasks < 1 or options.tasks > options.turns:
        raise ValueError(f"--tasks ({options.tasks}) must be between 1 and --turns")
    trace = generate_trace(
        TraceSpec(turns=options.turns, facts=options.facts, seed=options.seed, tasks=options.tasks)
    )
    config = ours_config(
        trace, window=options.window, reserve=options.reserve, overrides=options.overrides
    )
    meter = RequestMeter(TokenEstimator(image_cost=options.image_cost))

    def summarizer() -> DeterministicSummarizer:
        return DeterministicSummarizer(
            estimator=TokenEstimator(image_cost=options.image_cost),
            max_tokens=options.summary_tokens,
            failure_rate=options.summary_failure_rate,
            seed=options.seed,
            keep_addresses=options.summary_addresses,
        )

    prefix = reference_prefix(
        trace,
        ours_config(
            trace,
            window=options.window,
            reserve=options.reserve,
            overrides=[*options.overrides, NO_EPISODE_TOOLS],
        ),
    )
    frames = TraceFrames(trace, observation=config.observation)
    metrics: list[PolicyMetrics] = []
    images: dict[str, int] = {}
    seconds: dict[str, float] = {}
    ours: OursRun | None = None
    mismatches = 0
    episodes: OursRun | None = None
    marks = ""
    for name in ALL_POLICIES:
        if name not in options.policies:
            continue
        started = time.perf_counter()
        if name == EPISODES:
            marked, added = mark_episodes(trace)
            marks = added.describe()
            marked_config = ours_config(
                marked,
                window=options.window,
                reserve=options.reserve,
                overrides=[*options.overrides, *EPISODE_SETTINGS],
            )
            episodes = run_ours(marked, config=marked_config, meter=meter, summarizer=summarizer())
            episodes.run.name = EPISODES
            episodes.run.source = (
                f"ours on the trace as a model using begin_episode, end_episode and "
                f"condense_context runs it (+{marks}), the default deployment's context settings"
            )
            metrics.append(measure(episodes.run, marked, meter, window=options.window))
            images[name] = _image_tokens(episodes.run.requests, meter)
            seconds[name] = time.perf_counter() - started
            continue
        if name == OURS:
            ours = run_ours(trace, config=config, meter=meter, summarizer=summarizer())
            run = ours.run
            mismatches = sum(
                1
                for request, snapshot in zip(run.requests, ours.snapshots, strict=False)
                if meter.total(request) != snapshot.total_tokens
            )
        else:
            policy = BASELINES[name](budget=budget, meter=meter, summarizer=summarizer())
            run = simulate(policy, trace, prefix, frames)
        metrics.append(measure(run, trace, meter, window=options.window))
        images[name] = _image_tokens(run.requests, meter)
        seconds[name] = time.perf_counter() - started
    return EfficiencyResults(
        options,
        trace,
        metrics,
        ours,
        seconds,
        snapshot_mismatches=mismatches,
        episodes=episodes,
        episode_marks=marks,
        image_tokens=images,
    )


def _image_tokens(requests: Sequence[ModelRequest], meter: RequestMeter) -> int:
    return sum(
        meter.estimator.image(image.width, image.height)
        for request in requests
        if request.refreshed is not None
        for image in request.refreshed.images
    )


def _budget(options: EfficiencyOptions) -> Budget:
    if options.reserve >= options.window:
        raise ValueError(f"--reserve ({options.reserve}) must be less than --window")
    return Budget(context_window=options.window, reserve_tokens=options.reserve)


# --------------------------------------------------------------------------- output


HEADERS = (
    "policy",
    "requests",
    "input tokens",
    "x full",
    "peak request",
    "cached prefix",
    "effective cost",
    "x full",
    "compactions",
    "summarizer in",
    "facts closed-book / by address (via index) / lost",
    "over window",
    "violations",
)


def table_rows(results: EfficiencyResults) -> list[list[str]]:
    by_policy = results.by_policy()
    full = by_policy.get("full")
    rows = []
    for m in results.metrics:
        compactions = str(m.compactions) + (f" +{m.prunes} prunes" if m.prunes else "")
        requests = f"{m.requests}/{m.planned_requests}"
        comparable = m.requests == m.planned_requests
        rows.append(
            [
                m.policy,
                requests,
                compact_number(m.input_tokens),
                _ratio(m.input_tokens, full.input_tokens if full and comparable else None),
                compact_number(m.peak_request_tokens),
                f"{m.prefix_share:.0%}",
                compact_number(m.effective_cost),
                _ratio(m.effective_cost, full.effective_cost if full and comparable else None),
                compactions,
                compact_number(m.summarizer_input_tokens),
                f"{m.facts.verbatim} / {m.facts.recoverable} ({m.facts.via_index}) / "
                f"{m.facts.lost}",
                str(m.overflow_requests),
                str(m.violations_total),
            ]
        )
    return rows


def best_published_ratio(results: EfficiencyResults) -> tuple[float, str] | None:
    """(ours' effective cost / the cheapest baseline's, that baseline) over the baselines
    that sent every request; None when ours or every baseline is missing."""
    by_policy = results.by_policy()
    ours = by_policy.get(OURS)
    baselines = [
        m
        for name, m in by_policy.items()
        if name not in (OURS, EPISODES)
        and m.requests == m.planned_requests
        and m.effective_cost > 0
    ]
    if ours is None or not baselines:
        return None
    best = min(baselines, key=lambda m: m.effective_cost)
    return ours.effective_cost / best.effective_cost, best.policy


def _ratio(value: float, base: float | None) -> str:
    if not base:
        return "-"
    return f"{value / base:.2f}"


def render(results: EfficiencyResults) -> str:
    o = results.options
    kept = {
        "all": "keeping the addresses of every output",
        "cut": "keeping the addresses of cut or pruned outputs",
        "none": "writing no addresses",
    }[o.summary_addresses]
    tasks = f"{o.tasks} tasks, " if o.tasks > 1 else ""
    lines = [
        f"Context efficiency: {tasks}{o.turns} tool turns (+{o.tasks} final), "
        f"{len(results.trace.facts)} facts, seed {o.seed}, window {o.window}, reserve "
        f"{o.reserve}, images by the {o.image_cost} formula, summarizer of at most "
        f"{o.summary_tokens} tokens {kept}, failure rate {o.summary_failure_rate:.0%}",
        "",
        markdown_table(HEADERS, table_rows(results)),
        "",
    ]
    for m in results.metrics:
        detail = []
        if m.status != "completed":
            detail.append(f"ended {m.status}: {m.reason}")
        if m.requests < m.planned_requests:
            detail.append("ratios to full omitted: not every request was sent")
        if m.facts.not_reached:
            detail.append(f"{m.facts.not_reached} probes after the run ended count as lost")
        if m.summarizer_calls:
            detail.append(f"summarizer calls {m.summarizer_calls}, failed {m.summarizer_failures}")
        v = m.violations
        if v.total:
            detail.append(
                f"violations: orphan {v.orphan_tool_items}, resident {v.resident_changed}, "
                f"failed summary altered {v.failed_summary_altered_context}, unexplained "
                f"{v.unexplained_rewrite}, in-place {v.in_place_item_rewrites}"
            )
        seconds = results.seconds.get(m.policy)
        if seconds is not None:
            detail.append(f"{seconds:.1f} s")
        lines.append(f"- {m.policy}: {m.source}" + (f" ({'; '.join(detail)})" if detail else ""))
    ours = results.ours
    versus = best_published_ratio(results)
    if versus is not None:
        ratio, best = versus
        lines.append("")
        lines.append(f"ours: effective cost {ratio:.2f}x the best published policy ({best})")
        episodes = results.by_policy().get(EPISODES)
        if episodes is not None:
            best_cost = results.by_policy()[best].effective_cost
            lines.append(
                f"episodes: effective cost {episodes.effective_cost / best_cost:.2f}x the best "
                f"published policy ({best})"
            )
    lines.extend(_image_lines(results))
    if ours is not None:
        lines.append("")
        lines.append(
            f"ours ran the real Harness with compactor {ours.compactor}; meter vs prompt_snapshot "
            f"mismatches: {results.snapshot_mismatches} of {len(ours.run.requests)} requests"
        )
        if not ours.real_compactor:
            lines.append(
                "NOTE: this branch has no compactor yet (NoCompaction, issue #4 not merged), so "
                "`ours` stops when the request no longer fits. Re-run this command once the "
                "compaction branch is on main."
            )
    return "\n".join(lines)


def _image_lines(results: EfficiencyResults) -> list[str]:
    """What the camera frames cost: per request, and as a share of each of our rows."""
    by_policy = results.by_policy()
    lines = []
    for name in (OURS, EPISODES):
        m = by_policy.get(name)
        tokens = results.image_tokens.get(name, 0)
        if m is None or not m.requests or not tokens:
            continue
        width, height = results.trace.spec.image_size
        per_request = tokens / m.requests
        lines.append(
            f"{name}: observation images {per_request:.0f} tokens per request (one "
            f"{width}x{height} frame by the {results.options.image_cost} formula, after the "
            f"cache breakpoint so never cached): {compact_number(tokens)} in all, "
            f"{tokens / m.effective_cost:.0%} of its effective cost, "
            f"{per_request / (m.input_tokens / m.requests):.0%} of its average request. The "
            "default sends the current frame only (Refreshed, replaced before every call; "
            "never in the history, a placeholder in what the summarizer reads): kept in the "
            "history as a transcript keeps them, the last 10 frames alone would add "
            f"{compact_number(10 * per_request)} tokens to every request"
        )
    return lines


def plot(results: EfficiencyResults, *, out_dir: Path = OUT_DIR) -> tuple[Path | None, str]:
    def draw(plt: Any) -> None:
        figure, (tokens_axis, facts_axis) = plt.subplots(
            1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [2.2, 1]}
        )
        for m in results.metrics:
            tokens_axis.plot(range(1, len(m.request_tokens) + 1), m.request_tokens, label=m.policy)
        tokens_axis.axhline(results.options.window, color="black", linestyle="--", linewidth=0.8)
        tokens_axis.set_yscale("log")
        tokens_axis.set_xlabel("turn")
        tokens_axis.set_ylabel("request tokens (log)")
        tokens_axis.set_title("Request size per turn (dashed: window)")
        tokens_axis.legend(fontsize=8)
        names = [m.policy for m in results.metrics]
        verbatim = [m.facts.verbatim for m in results.metrics]
        recoverable = [m.facts.recoverable for m in results.metrics]  # direct or via index
        lost = [m.facts.lost for m in results.metrics]
        facts_axis.barh(names, verbatim, label="verbatim", color="#2b8a3e")
        facts_axis.barh(names, recoverable, left=verbatim, label="by address", color="#74b816")
        facts_axis.barh(
            names,
            lost,
            left=[a + b for a, b in zip(verbatim, recoverable, strict=True)],
            label="lost",
            color="#c92a2a",
        )
        facts_axis.invert_yaxis()
        facts_axis.set_title("Facts at probe time")
        facts_axis.legend(fontsize=8)
        figure.tight_layout()

    return save_plot("context_efficiency.png", draw, out_dir=out_dir)


def to_json(results: EfficiencyResults) -> dict[str, Any]:
    return {
        "options": {**vars(results.options), "policies": list(results.options.policies)},
        "compactor": results.ours.compactor if results.ours else None,
        "snapshot_mismatches": results.snapshot_mismatches,
        "seconds": results.seconds,
        "metrics": [m.model_dump() for m in results.metrics],
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = EfficiencyOptions()
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.context_efficiency",
        description="Context efficiency of published policies vs the real Harness, one run.",
    )
    parser.add_argument("--turns", type=int, default=defaults.turns, help="tool turns in the trace")
    parser.add_argument("--facts", type=int, default=defaults.facts, help="planted, probed facts")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--window", type=int, default=defaults.window, help="context window")
    parser.add_argument("--reserve", type=int, default=defaults.reserve, help="reserve tokens")
    parser.add_argument(
        "--image-cost", choices=["openai", "anthropic"], default=defaults.image_cost
    )
    parser.add_argument("--summary-tokens", type=int, default=defaults.summary_tokens)
    parser.add_argument("--summary-failure-rate", type=float, default=defaults.summary_failure_rate)
    parser.add_argument(
        "--summary-addresses",
        choices=["cut", "all", "none"],
        default=defaults.summary_addresses,
        help="archive addresses the summarizer keeps: of cut or pruned outputs, all, or none",
    )
    parser.add_argument(
        "--tasks",
        type=int,
        default=defaults.tasks,
        help="tasks in the session (several instructions, each with its final report)",
    )
    parser.add_argument(
        "--policies",
        default=",".join(ALL_POLICIES),
        help=f"comma-separated subset of {','.join(ALL_POLICIES)}",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Harness config override for `ours`, e.g. context.pruning.protect_recent_items=10",
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="where JSON and plot go")
    parser.add_argument("--no-plot", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    options = EfficiencyOptions(
        turns=args.turns,
        facts=args.facts,
        seed=args.seed,
        window=args.window,
        reserve=args.reserve,
        image_cost=args.image_cost,
        summary_tokens=args.summary_tokens,
        summary_failure_rate=args.summary_failure_rate,
        summary_addresses=args.summary_addresses,
        tasks=args.tasks,
        policies=[p.strip() for p in args.policies.split(",") if p.strip()],
        overrides=args.overrides,
    )
    try:
        results = run_benchmark(options)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(results))
    path = save_json("context_efficiency.json", to_json(results), out_dir=args.out)
    print(f"\nJSON written to {path}")
    if not args.no_plot:
        print(plot(results, out_dir=args.out)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

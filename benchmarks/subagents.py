"""What delegating a search saves the parent: the same search done inline and delegated.

    python benchmarks/subagents.py [--looks 20] [--chars 3000] [--after 10] [--window 64000]

A search that needs N looks (each result K characters, all but the last finding nothing)
followed by M more turns of the parent's own work runs twice with scripted models: once the
parent looks itself, once it delegates the search to a sub-agent and reads one handoff.
Per way the table gives the parent's last request and its largest one (estimated tokens,
what compaction reads), the prompt tokens of all the parent's calls, of all the child's,
the model calls, the parent's compaction passes (pruning or checkpoints), the characters
of Resident prefix the child's first request shares byte for byte with the parent's, and
the wall time. Token counts are
the harness's own estimates, so they compare exactly from run to run; only the time moves.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness import Harness, HarnessConfig, tool
from harness.events import CompactionEvent, EventBase, HandoffEvent, PromptSnapshotEvent
from harness.messages import ModelRequest, ModelResponse
from harness.providers import ScriptedModel, call, reply

OUT = Path(__file__).resolve().parent / "out"


@dataclass(frozen=True)
class SearchOptions:
    looks: int = 20
    chars: int = 3000
    after: int = 10
    window: int = 64_000
    reserve: int = 8_000


@dataclass
class WayResult:
    way: str
    parent_last_tokens: int
    parent_peak_tokens: int
    parent_prompt_tokens: int
    child_prompt_tokens: int
    model_calls: int
    parent_compactions: int
    shared_prefix_chars: int
    handoff: str
    """The handoff's status ("-" inline): a delegated search that did not complete
    would make the comparison meaningless."""
    seconds: float


def _look_tool(options: SearchOptions) -> Any:
    counter = {"n": 0}

    @tool
    def look(area: str) -> str:
        """Look at one area closely.

        Args:
            area: Which area.
        """
        counter["n"] += 1
        found = counter["n"] == options.looks
        head = f"{area}: " + ("the blue mug, ref mug_7, at (0.41, -0.12, 0.83). " if found else "")
        filler = " ".join(f"cell{i}=empty" for i in range(options.chars // 11))
        return (head + filler)[: max(options.chars, len(head))]

    @tool
    def work(step: int) -> str:
        """Do one step of the parent's own work.

        Args:
            step: Which step.
        """
        return f"step {step} done"

    return look, work


def _config(options: SearchOptions) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": options.looks + options.after + 10},
            "memory": {"enabled": False},
            "context": {
                "compaction": {"context_window": options.window, "reserve_tokens": options.reserve}
            },
            # budgets that let the whole search run: the point is the parent's context
            "subagents": {
                "enabled": True,
                "max_turns": options.looks + 5,
                "max_tokens": 100_000_000,
            },
        }
    )


class NoSummaries(ScriptedModel):
    supports_summaries = False  # deterministic checkpoints: the same numbers every run


def _search_script(options: SearchOptions) -> list[ModelResponse]:
    return [call("look", area=f"shelf {i}") for i in range(options.looks)]


def _run(options: SearchOptions, *, delegated: bool) -> tuple[WayResult, list[ModelRequest]]:
    look, work = _look_tool(options)
    finish = [call("work", step=i) for i in range(options.after)] + [reply("done")]
    handoff = {
        "summary": "the blue mug is on shelf " + str(options.looks - 1),
        "findings": [{"ref": "mug_7", "position": [0.41, -0.12, 0.83], "confidence": 0.9}],
    }
    if delegated:
        parent = ScriptedModel(
            [call("delegate", goal="find the blue mug", tools=["look"]), *finish]
        )
        child = ScriptedModel([*_search_script(options), reply(json.dumps(handoff))])
    else:
        parent = ScriptedModel([*_search_script(options), *finish])
        child = ScriptedModel([])
    started = time.perf_counter()
    with Harness(
        _config(options),
        model=parent,
        subagent_model=child,
        compaction_model=NoSummaries([]),
        tools=[look, work],
    ) as h:
        events: list[EventBase] = list(h.run_stream("find the blue mug, then tidy up"))
    seconds = time.perf_counter() - started
    task_id = events[0].task_id
    parent_snaps = [
        e for e in events if isinstance(e, PromptSnapshotEvent) and e.task_id == task_id
    ]
    child_snaps = [e for e in events if isinstance(e, PromptSnapshotEvent) and e.task_id != task_id]
    shared = 0
    if child.requests:
        child_prefix = child.requests[0].system
        parent_prefix = parent.requests[0].system
        if child_prefix == parent_prefix:
            shared = len("".join(block.text for block in child_prefix))
    return (
        WayResult(
            way="delegated" if delegated else "inline",
            parent_last_tokens=parent_snaps[-1].total_tokens,
            parent_peak_tokens=max(s.total_tokens for s in parent_snaps),
            parent_prompt_tokens=sum(s.total_tokens for s in parent_snaps),
            child_prompt_tokens=sum(s.total_tokens for s in child_snaps),
            model_calls=len(parent.requests) + len(child.requests),
            parent_compactions=sum(
                1
                for e in events
                if isinstance(e, CompactionEvent)
                and e.task_id == task_id
                and e.status in ("completed", "fallback")
            ),
            shared_prefix_chars=shared,
            handoff=next((e.status for e in events if isinstance(e, HandoffEvent)), "-"),
            seconds=round(seconds, 3),
        ),
        parent.requests,
    )


def run_benchmark(options: SearchOptions) -> list[WayResult]:
    return [_run(options, delegated=False)[0], _run(options, delegated=True)[0]]


def table(results: list[WayResult], options: SearchOptions) -> str:
    inline, delegated = results
    lines = [
        f"search of {options.looks} looks x {options.chars} chars, then {options.after} turns; "
        f"window {options.window}, reserve {options.reserve}",
        "",
        "| way | parent last request | parent peak | parent prompt (all calls) | child prompt "
        "| model calls | parent compaction passes | shared Resident chars | handoff | s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.way} | {r.parent_last_tokens} | {r.parent_peak_tokens} | "
            f"{r.parent_prompt_tokens} | {r.child_prompt_tokens} | {r.model_calls} | "
            f"{r.parent_compactions} | {r.shared_prefix_chars} | {r.handoff} | {r.seconds:.2f} |"
        )
    ratio = inline.parent_last_tokens / max(1, delegated.parent_last_tokens)
    lines.append("")
    lines.append(
        f"the parent's last request is {ratio:.1f}x smaller when the search is delegated; "
        f"all prompt tokens: inline {inline.parent_prompt_tokens}, delegated "
        f"{delegated.parent_prompt_tokens + delegated.child_prompt_tokens}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--looks", type=int, default=SearchOptions.looks)
    parser.add_argument("--chars", type=int, default=SearchOptions.chars)
    parser.add_argument("--after", type=int, default=SearchOptions.after)
    parser.add_argument("--window", type=int, default=SearchOptions.window)
    parser.add_argument("--reserve", type=int, default=SearchOptions.reserve)
    args = parser.parse_args(argv)
    options = SearchOptions(args.looks, args.chars, args.after, args.window, args.reserve)
    results = run_benchmark(options)
    print(table(results, options))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "subagents.json").write_text(
        json.dumps({"options": asdict(options), "results": [asdict(r) for r in results]}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

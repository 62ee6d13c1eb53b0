"""Metrics of one policy's run, computed only from the requests the model received.

A :class:`PolicyRun` is what a policy produced over a trace: every request in order, what
the policy did to the context before each (its *actions*), its summarizer, and, for the
real Harness, its archive. :func:`measure` turns it into :class:`PolicyMetrics` with the
same meter and the same rules for every policy:

- **input tokens**: the sum of every request's tokens; **peak**: the largest request;
- **cached prefix**: tokens a provider prompt cache serves under the usual breakpoint
  model (a breakpoint after the last conversation item of every request): the leading
  segments identical to the previous request, up to its breakpoint. **Effective cost** =
  uncached x1 + cached x0.1 + cache writes x1.25 (+ summarizer input x1), in tokens;
- **facts** at each probe turn: *closed-book* (``verbatim``) if the exact string is in the
  request; *by address* (``recoverable``) if the address of an archived output containing
  it is in the request, or in an index the request leads to in at most
  :data:`INDEX_RECALLS` ``recall`` calls (an archived text listing addresses: a page of the
  harness's index, a page of pages, an earlier checkpoint), counted apart as
  ``via_index``; else *lost* (including probes after a run ended early);
- **invariant violations**, counted in requests: a tool call without its result or a
  result without its call; the Resident part (system prompt, profile, tool definitions)
  differing from the first request of its task (the specification assembles the tool
  definitions at each task's start); conversation items rewritten after a failed summary
  with no successful compaction step; rewritten with no compaction step at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from benchmarks.lib.metering import RequestMeter, Segment, request_text, unmatched_tool_items
from benchmarks.lib.session_trace import Trace
from benchmarks.lib.summarizer import ADDRESS_PATTERN, DeterministicSummarizer
from harness.messages import ModelRequest

__all__ = [
    "COMPACTION_ACTIONS",
    "FAILED_SUMMARY",
    "PRUNE",
    "SUPERSEDE",
    "FactCounts",
    "PolicyMetrics",
    "PolicyRun",
    "Violations",
    "measure",
]

COMPACTION_ACTIONS = frozenset(
    {"trim", "mask", "condense", "checkpoint", "fallback", "shrink", "task_end", "eviction"}
)
"""Actions that legitimately rewrite earlier conversation items."""
PRUNE = "prune"
SUPERSEDE = "supersede"
"""A superseded Task Notes snapshot left (explains a rewrite; not counted as a prune)."""
FAILED_SUMMARY = "summary_failed"
INDEX_RECALLS = 2
"""Recalls of index pages a fact may take to be counted reachable by address."""
CACHE_READ_PRICE = 0.1
CACHE_WRITE_PRICE = 1.25
RESIDENT_BLOCKS = frozenset({"system", "embodiment", "skills", "memory"})


@dataclass
class PolicyRun:
    """Everything a policy did over one trace."""

    name: str
    source: str
    """Where the policy and its parameters come from."""
    planned_requests: int
    requests: list[ModelRequest] = field(default_factory=list)
    actions: list[list[str]] = field(default_factory=list)
    """Per request: what the policy did to the context before sending it."""
    summarizer: DeterministicSummarizer | None = None
    archive: Callable[[str], str | None] | None = None
    status: str = "completed"
    reason: str = ""


class FactCounts(BaseModel):
    verbatim: int = 0
    """Closed-book: the fact's own text is in the request."""
    recoverable: int = 0
    """Reachable by address (directly or through an index), not closed-book."""
    via_index: int = 0
    """Of ``recoverable``: only through an index page (one or two recalls to find it)."""
    lost: int = 0
    not_reached: int = 0
    """Included in ``lost``: probes after the run ended."""
    lost_ids: list[str] = Field(default_factory=list)


class Violations(BaseModel):
    orphan_tool_items: int = 0
    resident_changed: int = 0
    failed_summary_altered_context: int = 0
    unexplained_rewrite: int = 0
    in_place_item_rewrites: int = 0

    @property
    def total(self) -> int:
        return (
            self.orphan_tool_items
            + self.resident_changed
            + self.failed_summary_altered_context
            + self.unexplained_rewrite
            + self.in_place_item_rewrites
        )


class PolicyMetrics(BaseModel):
    policy: str
    source: str
    status: str
    reason: str = ""
    requests: int
    planned_requests: int
    input_tokens: int
    peak_request_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    prefix_share: float
    summarizer_input_tokens: int
    summarizer_calls: int
    summarizer_failures: int
    effective_cost: float
    compactions: int
    prunes: int
    overflow_requests: int
    facts: FactCounts
    violations: Violations
    violations_total: int
    request_tokens: list[int] = Field(default_factory=list, repr=False)


def measure(run: PolicyRun, trace: Trace, meter: RequestMeter, *, window: int) -> PolicyMetrics:
    """Compute :class:`PolicyMetrics` for ``run`` (see the module docstring)."""
    rewrites_before = meter.in_place_rewrites
    violations = Violations()
    totals: list[int] = []
    cached_sum = write_sum = uncached_sum = 0
    previous: list[Segment] = []
    previous_breakpoint = 0
    previous_items: list[str] = []
    resident_key: tuple[str, ...] | None = None
    task_starts = {task.first_turn for task in trace.tasks}
    for index, request in enumerate(run.requests):
        segments = meter.segments(request)
        total = sum(s.tokens for s in segments)
        totals.append(total)
        breakpoint = _breakpoint(segments)
        cacheable = sum(s.tokens for s in segments[:breakpoint])
        cached = _common_prefix_tokens(previous[:previous_breakpoint], segments[:breakpoint])
        cached_sum += cached
        write_sum += cacheable - cached
        uncached_sum += total - cacheable
        previous, previous_breakpoint = segments, breakpoint

        calls, results = unmatched_tool_items(request.items)
        if calls or results:
            violations.orphan_tool_items += 1
        key = _resident_key(request, segments)
        if resident_key is None or index + 1 in task_starts:
            resident_key = key  # tool definitions are assembled at each task's start
        elif key != resident_key:
            violations.resident_changed += 1
        items = [s.key for s in segments if s.part == "item"]
        actions = run.actions[index] if index < len(run.actions) else []
        if index and items[: len(previous_items)] != previous_items:
            if COMPACTION_ACTIONS.intersection(actions) or {PRUNE, SUPERSEDE} & set(actions):
                pass
            elif FAILED_SUMMARY in actions:
                violations.failed_summary_altered_context += 1
            else:
                violations.unexplained_rewrite += 1
        previous_items = items
    violations.in_place_item_rewrites = meter.in_place_rewrites - rewrites_before

    summarizer = run.summarizer
    summary_tokens = summarizer.input_tokens if summarizer else 0
    all_actions = [action for actions in run.actions for action in actions]
    input_tokens = sum(totals)
    return PolicyMetrics(
        policy=run.name,
        source=run.source,
        status=run.status,
        reason=run.reason,
        requests=len(run.requests),
        planned_requests=run.planned_requests,
        input_tokens=input_tokens,
        peak_request_tokens=max(totals, default=0),
        cached_tokens=cached_sum,
        cache_write_tokens=write_sum,
        uncached_tokens=uncached_sum,
        prefix_share=cached_sum / input_tokens if input_tokens else 0.0,
        summarizer_input_tokens=summary_tokens,
        summarizer_calls=summarizer.calls if summarizer else 0,
        summarizer_failures=summarizer.failures if summarizer else 0,
        effective_cost=uncached_sum
        + CACHE_WRITE_PRICE * write_sum
        + CACHE_READ_PRICE * cached_sum
        + summary_tokens,
        compactions=sum(1 for action in all_actions if action in COMPACTION_ACTIONS),
        prunes=all_actions.count(PRUNE),
        overflow_requests=sum(1 for total in totals if total > window),
        facts=_probe_facts(run, trace),
        violations=violations,
        violations_total=violations.total,
        request_tokens=totals,
    )


def _breakpoint(segments: list[Segment]) -> int:
    """Index after the last conversation item (or after the system/tool prefix)."""
    for index in range(len(segments) - 1, -1, -1):
        if segments[index].part in ("item", "system", "tools"):
            return index + 1
    return 0


def _common_prefix_tokens(previous: list[Segment], current: list[Segment]) -> int:
    tokens = 0
    for before, now in zip(previous, current, strict=False):
        if before.key != now.key:
            break
        tokens += now.tokens
    return tokens


def _resident_key(request: ModelRequest, segments: list[Segment]) -> tuple[str, ...]:
    tools = [s.key for s in segments if s.part == "tools"]
    blocks = [f"{b.name}:{hash(b.text)}" for b in request.system if b.name in RESIDENT_BLOCKS]
    return (*tools, *blocks)


def _probe_facts(run: PolicyRun, trace: Trace) -> FactCounts:
    counts = FactCounts()
    for fact in trace.facts:
        if fact.probe_turn > len(run.requests):
            counts.not_reached += 1
            counts.lost += 1
            counts.lost_ids.append(fact.id)
            continue
        text = request_text(run.requests[fact.probe_turn - 1])
        if fact.key in text:
            counts.verbatim += 1
            continue
        depth = None if run.archive is None else recalls_to(fact.key, text, run.archive)
        if depth is None:
            counts.lost += 1
            counts.lost_ids.append(fact.id)
        else:
            counts.recoverable += 1
            counts.via_index += int(depth > 0)
    return counts


def recalls_to(
    key: str, text: str, archive: Callable[[str], str | None], *, limit: int = INDEX_RECALLS
) -> int | None:
    """Index pages to read before the address of an output containing ``key`` is known:
    0 when that address is in ``text`` itself; None when no index within ``limit`` recalls
    lists it. (Reading the output itself is one more ``recall``.)"""
    frontier = set(ADDRESS_PATTERN.findall(text))
    seen: set[str] = set()
    for depth in range(limit + 1):
        found: set[str] = set()
        for address in frontier - seen:
            seen.add(address)
            body = archive(address) or ""
            if key in body:
                return depth
            found.update(ADDRESS_PATTERN.findall(body))
        frontier = found
    return None

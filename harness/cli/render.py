"""Human-readable rendering of the event stream (rich), and JSON lines for machines."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # annotations only: the reading commands need neither at import
    from harness.events import EventBase
    from harness.redact import RedactingStream, Redactor

__all__ = [
    "JsonLinesRenderer",
    "TimelineRenderer",
    "describe_outcome",
    "redacted",
    "timeline_console",
    "wide_console",
]


DECISION_CHARS = 160
"""A decision's arguments shown on its timeline line, at most (``…`` marks a cut)."""


def wide_console() -> Console:
    """A console for tables: the terminal's width, or 160 columns when the output goes to
    a file or a pipe (rich would otherwise assume 80 and squeeze ids)."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=160)
    return console


def timeline_console() -> Console:
    """A console for a timeline: wrapped at the terminal's width, or, when the output goes
    to a file or a pipe, one line per event, never wrapped (a line split mid-word, or a JSON
    argument split in two, is no use to ``grep`` or a log reader)."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=True)
    return console


def describe_outcome(done: Any) -> str:
    """The outcome of a ``done`` event in one line: what it is, who decided, and (when no
    task check is configured) that nothing confirmed the model's report."""
    evidence = done.evidence
    who = f"{evidence.checked_by}: " if evidence.checked_by else ""
    text = done.outcome.replace("_", " ")
    if evidence.summary:
        text += f" ({who}{evidence.summary})"
    if done.status == "completed" and done.outcome == "unverified" and evidence.check == "none":
        text += "; exit code 0 rests on the model's word alone"
    return text


def redacted(event: EventBase, redactor: Redactor | None) -> EventBase:
    """The event with secrets replaced (what the CLI prints, like what the store keeps)."""
    if redactor is None:
        return event
    return type(event).model_validate(redactor.value(event.model_dump()))


class JsonLinesRenderer:
    """One JSON object per event per line (``--json``)."""

    def __init__(self, stream: TextIO | None = None, *, redactor: Redactor | None = None) -> None:
        self.stream = stream or sys.stdout
        self.redactor = redactor

    def __call__(self, event: EventBase) -> None:
        self.stream.write(redacted(event, self.redactor).model_dump_json() + "\n")
        self.stream.flush()


class TimelineRenderer:
    """A readable live timeline: one line per meaningful event, streamed model text.

    With a redactor, streamed text is redacted as one stream per model call, like the
    harness does before it emits deltas, so even deltas recorded by an older harness (each
    redacted alone) cannot print a key that was split between two of them.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        show_prompt: bool = False,
        redactor: Redactor | None = None,
    ) -> None:
        self.console = console or timeline_console()
        self.show_prompt = show_prompt
        self.redactor = redactor
        self._streaming = False
        self._streamed_text = False
        """Model text of the current turn already printed as it streamed."""
        self._text_stream: RedactingStream | None = None
        self._lanes: set[str] = set()
        """Sub-agent lanes seen (``lane_started``): their events are indented."""
        self._indent = ""

    def __call__(self, event: EventBase) -> None:
        kind = event.type  # type: ignore[attr-defined]
        if kind != "model_delta":  # deltas are redacted together, as a stream
            event = redacted(event, self.redactor)
        if kind == "lane_started":
            self._lanes.add(event.task_id)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return
        if self._streaming and kind != "model_delta":
            self._end_streamed_text()
        self._indent = "[magenta]  |[/magenta] " if event.task_id in self._lanes else ""
        handler(event)

    def _end_streamed_text(self) -> None:
        if self._text_stream is not None:
            self.console.print(escape(self._text_stream.finish()), end="", soft_wrap=True)
            self._text_stream = None
        self.console.print()
        self._streaming = False

    def _line(self, turn: int, tag: str, text: str, style: str = "") -> None:
        prefix = f"[dim]t{turn:<3}[/dim] " if turn else "     "
        body = f"[{style}]{escape(text)}[/{style}]" if style else escape(text)
        self.console.print(f"{self._indent}{prefix}[bold]{escape(tag):<11}[/bold] {body}")

    def _on_task_started(self, e: Any) -> None:
        self._line(0, "task", e.instruction, "cyan")

    def _on_task_resumed(self, e: Any) -> None:
        calls = e.describe_interrupted()
        text = f"from turn {e.from_turn}: {e.instruction}"
        if calls:
            text += f"; interrupted: {calls}"
        if e.describe_world():
            text += f"; {e.describe_world()}"
        self._line(0, "resumed", text, "cyan")

    def _on_tools_listed(self, e: Any) -> None:
        self._line(0, "tools", f"{', '.join(e.tools)} ({e.tokens} tokens)", "dim")

    def _on_skill_loaded(self, e: Any) -> None:
        self._line(e.turn, "skill", f"loaded {e.name} ({e.tokens} tokens)", "magenta")

    def _on_observation(self, e: Any) -> None:
        cameras = ", ".join(f"{name} {w}x{h}" for name, (w, h) in e.cameras.items())
        self._line(e.turn, "observe", cameras or "state only", "dim")

    def _on_scene_update(self, e: Any) -> None:
        changes = [
            f"+{len(e.added)}" if e.added else "",
            f"~{len(e.changed)}" if e.changed else "",
            f"-{len(e.removed)}" if e.removed else "",
        ]
        text = " ".join(c for c in changes if c) or "no change"
        self._line(
            e.turn, "scene", f"{e.objects} objects, {text}; brief {e.brief_tokens} tok", "dim"
        )

    def _on_prompt_snapshot(self, e: Any) -> None:
        if self.show_prompt:
            self._line(
                e.turn,
                "prompt",
                f"{e.total_tokens}/{e.threshold_tokens} tokens {e.sections}",
                "dim",
            )

    def _on_compaction(self, e: Any) -> None:
        if e.status == "started":
            return
        self._line(
            e.turn,
            "compaction",
            f"{e.mode} {e.status}: {e.tokens_before} -> "
            f"{e.tokens_after} tokens, {e.items_folded} items folded"
            + (f" ({e.reason})" if e.reason else ""),
            "yellow",
        )

    def _on_episode(self, e: Any) -> None:
        depends = f" depending on {', '.join(e.depends_on)}" if e.depends_on else ""
        ended = f": {e.conclusion}" if e.conclusion else ""
        self._line(e.turn, "episode", f"{e.kind} {e.name} {e.status}{depends}{ended}", "cyan")

    def _on_context_pressure(self, e: Any) -> None:
        self._line(e.turn, "pressure", e.message, "yellow")

    def _on_model_delta(self, e: Any) -> None:
        if e.kind != "text":
            return
        text = e.delta
        if self.redactor is not None:
            if self._text_stream is None:
                self._text_stream = self.redactor.stream()
            text = self._text_stream.feed(text)
        if not self._streaming:
            self.console.print(
                f"{self._indent}[dim]t{e.turn:<3}[/dim] [bold]{'model':<11}[/bold] ", end=""
            )
            self._streaming = True
            self._streamed_text = True
        self.console.print(escape(text), end="", soft_wrap=True)

    def _on_model_response(self, e: Any) -> None:
        if e.text and not e.tool_calls:
            return  # the report is printed with done
        if e.text and not self._streamed_text:
            self._line(e.turn, "says", e.text, "italic")
        self._streamed_text = False
        for call in e.tool_calls:
            args = json.dumps(call.get("arguments", {}), separators=(",", ":"))
            if len(args) > DECISION_CHARS:  # cut, and said to be (the report has it whole)
                args = args[: DECISION_CHARS - 1] + "…"
            self._line(e.turn, "decide", f"{call['name']}({args})", "blue")

    def _on_model_retry(self, e: Any) -> None:
        self._line(
            e.turn, "retry", f"{e.error_kind}: waiting {e.wait_s:.1f}s ({e.message})", "yellow"
        )

    def _on_model_error(self, e: Any) -> None:
        self._line(e.turn, "model err", f"{e.kind}: {e.message}", "red")

    def _on_progress(self, e: Any) -> None:
        if e.source != "model":  # model text is shown with its decision
            self._line(e.turn, "progress", e.text, "dim")

    def _on_safety_check(self, e: Any) -> None:
        if e.outcome == "allow":
            return
        style = "red" if e.outcome == "block" else "yellow"
        self._line(e.turn, "safety", f"{e.outcome} {e.tool}: {e.reason or e.violations}", style)

    def _on_safety(self, e: Any) -> None:
        self._line(e.turn, "ROBOT", e.reason, "bold red")

    def _on_hook_decision(self, e: Any) -> None:
        self._line(e.turn, "hook", f"{e.hook} {e.action} {e.tool}: {e.reason}", "yellow")

    def _on_tool_result(self, e: Any) -> None:
        first = e.text.strip().splitlines()[0] if e.text.strip() else ""
        # An interrupted or timed-out motion's outcome is unknown: not shown as a failure.
        unknown = e.error_kind == "outcome_unknown"
        style = "yellow" if unknown else ("red" if e.is_error else "green")
        kind = f"[{e.error_kind}] " if e.error_kind else ""
        self._line(e.turn, e.name, f"{kind}{first[:160]}", style)  # a name is never cut
        if e.evaluation is not None:  # the verdict reads best right under its result
            self._verdict(e.turn, e.name, e.evaluation)

    def _on_evaluation(self, e: Any) -> None:
        if e.verdict.status == "process":  # intermediate segments; the final one is above
            self._verdict(e.turn, f"{e.tool} #{e.segment}", e.verdict)

    def _verdict(self, turn: int, tool: str, verdict: Any) -> None:
        style = {"success": "green", "failure": "red"}.get(verdict.status, "yellow")
        evidence = f" - {verdict.evidence}" if verdict.evidence else ""
        self._line(turn, "evaluate", f"{tool}: {verdict.status}{evidence}", style)

    def _on_replan(self, e: Any) -> None:
        self._line(e.turn, "replan", e.revision, "cyan")

    def _on_user_query(self, e: Any) -> None:
        text = e.question if e.status == "asked" else f"{e.status}: {e.answer or ''}"
        self._line(e.turn, "ask user", text, "cyan")

    def _on_notification(self, e: Any) -> None:
        self._line(e.turn, "notify", e.message, "cyan")

    def _on_memory_consolidation(self, e: Any) -> None:
        self._line(
            e.turn,
            "memory",
            f"{e.status}: kept {len(e.kept)}, rejected {len(e.rejected)} {e.reason}",
            "dim",
        )

    def _on_model_discarded(self, e: Any) -> None:
        what = "complete answer" if e.complete else "answer in flight"
        self._line(e.turn, "discarded", f"model {what}: {e.reason}", "yellow")

    def _on_lane_started(self, e: Any) -> None:
        text = f"sub-agent {e.task_id}: {e.goal} (tools: {', '.join(e.tools) or 'none'}"
        if e.withheld:
            text += f"; withheld: {', '.join(e.withheld)}"
        self._line(0, "delegate", text + f"; at most {e.max_turns} turns)", "magenta")

    def _on_handoff(self, e: Any) -> None:
        handoff = e.handoff
        style = "green" if e.status == "completed" else "red"
        detail = handoff.get("summary") or handoff.get("error") or ""
        found = len(handoff.get("findings") or [])
        self._line(e.turn, "handoff", f"{e.status}: {detail} ({found} findings)", style)

    def _on_recovery(self, e: Any) -> None:
        text = (
            f"sub-agent lanes: {e.resumed} resumed, {e.repaired} repaired, {e.abandoned} abandoned"
        )
        self._line(0, "recovery", text, "cyan")
        for detail in e.details:
            self._line(0, "", detail, "dim")

    def _on_done(self, e: Any) -> None:
        if e.task_id in self._lanes:  # a lane's end (`harness show --lanes`): its handoff follows
            style = "green" if e.status == "completed" else "red"
            self._line(e.turn, "done", f"{e.status}: {e.termination_reason}", style)
            return
        style = (
            "bold green" if e.status == "completed" and e.robot_stopped is not False else "bold red"
        )
        self._line(
            e.turn, "done", f"{e.status} after {e.turns} turns: {e.termination_reason}", style
        )
        if e.robot_stopped is False:
            self._line(e.turn, "ROBOT", "may still be moving: check it before anything else", style)
        outcome_style = {"achieved": "bold green", "not_achieved": "bold red"}.get(
            e.outcome, "bold yellow"
        )
        self._line(e.turn, "outcome", describe_outcome(e), outcome_style)
        for condition in e.evidence.conditions:
            mark = "[green]held[/green]" if condition.held else "[red]not held[/red]"
            self.console.print(
                f"      {mark} {escape(condition.condition)}: {escape(condition.evidence)}"
            )
        if e.report:
            self.console.print(f"\n[bold]Report[/bold]\n{escape(e.report)}")
        self.console.print(f"[dim]{escape(e.usage.describe())}[/dim]")

"""The turn loop: refresh -> decide -> execute one tool -> record -> refresh.

One :class:`TaskRun` is one task. ``events()`` is a plain generator driven from the
caller's thread; each phase is one method and limits are checked in one place
(:meth:`TaskRun._limit_reached`). Whatever happens (completion, cancellation, a limit, a
model error, an exception in a tool, the observation provider or the scene graph), a fully
consumed stream ends with exactly one ``done`` event, and the robot is left stopped.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from harness.context import bounded_text
from harness.errors import ContextBudgetError, ContextOverflowError, HarnessError, ModelError
from harness.events import (
    DoneEvent,
    EvaluationEvent,
    EventBase,
    HookDecisionEvent,
    ModelDeltaEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    ModelRetryEvent,
    ObservationEvent,
    ProgressEvent,
    PromptSnapshotEvent,
    ReplanEvent,
    SafetyCheckEvent,
    TaskStartedEvent,
    TaskStatus,
    ToolCallEvent,
    ToolResultEvent,
    ToolsListedEvent,
)
from harness.execution import CallOutcome, run_tool
from harness.images import encode_frame
from harness.messages import (
    AssistantItem,
    ImagePart,
    InstructionItem,
    Item,
    ModelResponse,
    RevisionItem,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
    Usage,
    Verdict,
    new_id,
)
from harness.providers.base import Delta, Final, RetryNotice
from harness.tools import Tool, ToolArgumentError, ToolOutput, close_matches, to_jsonable

if TYPE_CHECKING:
    from embodiment.types import Observation
    from harness.harness import Harness

__all__ = ["TaskRun", "render_observation"]

T = TypeVar("T")
Steps = Generator[EventBase, None, T]

HIDDEN_HOOK_NAMES = frozenset({"evaluate_run"})
CALIBRATION_STATE_KEYS = frozenset({"cameras", "frames"})
"""Observation state read by tools (camera calibration, frames), not shown to the model:
a few 4x4 matrices would cost ~100 tokens every turn and tell it nothing."""


@dataclass
class _Termination:
    status: TaskStatus
    reason: str
    report: str = ""


class TaskRun:
    """One task from its instruction to its ``done`` event."""

    def __init__(
        self,
        harness: Harness,
        instruction: str,
        *,
        images: list[ImagePart],
        max_turns: int,
        poll_replan: Callable[[], str | None] | None,
        should_cancel: Callable[[], bool] | None,
    ) -> None:
        self.h = harness
        self.task_id = new_id("task")
        self.instruction = instruction
        self.images = images
        self.max_turns = max_turns
        self.poll_replan = poll_replan
        self.should_cancel = should_cancel
        self.turn = 0
        self.usage = Usage()
        self.consecutive_failures = 0
        self.last_text = ""
        self.observation: Observation | None = None
        self._observation_text = ""
        self._observation_images: list[ImagePart] = []
        self.revisions: list[str] = []
        self._notes_version_sent = -1
        self._termination: _Termination | None = None
        self._finalized = False
        self._last_prompt_estimate = 0

    # ================================================================== driver

    def events(self) -> Iterator[EventBase]:
        """The task's event stream (a plain generator; see the module docstring)."""
        completed_normally = False
        try:
            try:
                yield from self._start()
                while self._termination is None:
                    if self._limit_reached():
                        break
                    self.turn += 1
                    yield from self._refresh()
                    if self._termination is not None or self._cancelled("before the model call"):
                        break
                    response = yield from self._decide()
                    if response is None:
                        break
                    if not response.tool_calls:
                        self._terminate(
                            "completed",
                            "the model answered without a tool call",
                            report=response.text,
                        )
                        break
                    yield from self._execute(response)
                    if self._termination is None:
                        yield from self._poll_replan()
            except HarnessError as exc:
                self._terminate("failed", f"{type(exc).__name__}: {exc}")
            except Exception as exc:
                traceback.print_exc()
                self._terminate("failed", f"harness error: {type(exc).__name__}: {exc}")
            completed_normally = True
            yield from self._finish()
        finally:
            if not completed_normally and not self._finalized:
                self._terminate("cancelled", "the event stream was closed by its consumer")
                for _ in self._finalize():
                    pass
            self.h._task_finished(self)

    def _emit(self, event: EventBase) -> EventBase:
        return self.h._emit(event, task_id=self.task_id, turn=self.turn)

    # ================================================================== limits

    def _cancelled(self, where: str) -> bool:
        if self.should_cancel is not None and self.should_cancel():
            self._terminate("cancelled", f"cancelled by the operator {where}")
            return True
        return False

    def _limit_reached(self) -> bool:
        """Every limit, checked in one place before each turn."""
        if self._cancelled("before the next turn"):
            return True
        if self.turn >= self.max_turns:
            self._terminate("max_turns", f"reached max_turns={self.max_turns}")
            return True
        budget = self.h.config.run.failure_budget
        if self.consecutive_failures >= budget:
            self._terminate(
                "failure_budget",
                f"{self.consecutive_failures} consecutive failed tool turns "
                f"(failure_budget={budget})",
            )
            return True
        return False

    def _terminate(self, status: TaskStatus, reason: str, *, report: str = "") -> None:
        if self._termination is None:
            self._termination = _Termination(status, reason, report)

    # ================================================================== start

    def _start(self) -> Steps[None]:
        h = self.h
        h.task_notes.reset(self.instruction)
        h.store.start_task(h.session_id, self.task_id, self.instruction)
        yield self._emit(
            TaskStartedEvent(
                instruction=self.instruction, max_turns=self.max_turns, images=len(self.images)
            )
        )
        h._prepare_task_resident()
        context = h.context
        h._sync_tool_sources()
        yield from self._offer_tools()
        for image in self.images:
            h.store.put_image(image)
        self._record(
            InstructionItem(text=self.instruction, images=[image.ref() for image in self.images])
        )
        context.add_transient_images(self.images)

    def _offer_tools(self) -> Steps[None]:
        """Put the visible tools into Resident context and announce them."""
        context = self.h.context
        tools = self.h.tools.visible()
        context.set_tools([t.spec() for t in tools])
        refusal = self.h._admit_tool_definitions()
        if refusal is not None:
            self._terminate("failed", f"capability admission: {refusal}")
        yield self._emit(
            ToolsListedEvent(
                tools=[t.name for t in tools],
                physical=[t.name for t in tools if t.physical],
                tokens=context.estimator.calibrated(context.tools_tokens()),
            )
        )

    # ================================================================== refresh

    def _refresh(self) -> Steps[None]:
        """Before every model call, in the specified order."""
        if self.turn > 1 and self.h._sync_tool_sources():
            # A tool source (MCP server) changed its tools during the last turn: the
            # new set applies from this model call on, never inside a turn.
            yield from self._offer_tools()
        self._snapshot_task_notes()
        if self._termination is None:
            yield from self._observe()
        if self._termination is None:
            yield from self._refresh_scene()
        if self._termination is None:
            yield from self._compact(force=False, reason="")

    def _snapshot_task_notes(self) -> None:
        notes = self.h.task_notes
        if notes.version != self._notes_version_sent:
            self._notes_version_sent = notes.version
            self._record(TaskNotesItem(text=notes.render(), version=notes.version))
            self.h._mirror_task_notes(notes)

    def _observe(self) -> Steps[None]:
        provider = self.h.observation_provider
        if provider is None:
            return
        try:
            observation = provider.observe()
        except Exception as exc:
            self._terminate("failed", f"observation provider failed: {type(exc).__name__}: {exc}")
            return
        self.observation = observation
        cfg = self.h.config.observation
        images: list[ImagePart] = []
        for name, frame in observation.images.items():
            image = encode_frame(
                frame,
                label=name,
                fmt=cfg.image_format,
                quality=cfg.jpeg_quality,
                max_side=cfg.max_image_side,
            )
            images.append(image)
        self.h._store_observation_images(images)
        self._observation_text = render_observation(observation)
        self._observation_images = images
        yield self._emit(
            ObservationEvent(
                cameras={image.label: [image.width, image.height] for image in images},
                images=[image.sha256 for image in images],
                state=to_jsonable(observation.state),
                timestamp=observation.timestamp,
            )
        )

    def _refresh_scene(self) -> Steps[None]:
        brief = ""
        scene = self.h.scene
        if scene is not None:
            try:
                refresh = scene.refresh(self.observation, focus=self._focus_text())
            except Exception as exc:
                self._terminate("failed", f"scene graph failed: {type(exc).__name__}: {exc}")
                return
            brief = refresh.brief
            if refresh.event is not None:
                yield self._emit(refresh.event)
        self.h.context.set_refreshed(
            brief=brief,
            observation=self._observation_text,
            images=self._observation_images,
        )

    def _focus_text(self) -> str:
        return "\n".join([self.instruction, *self.revisions, self.h.task_notes.render()])

    def _compact(self, *, force: bool, reason: str) -> Steps[None]:
        compactor = self.h.compactor
        try:
            for event in compactor.compact(self.h.context, force=force, reason=reason):
                if event.usage is not None:  # the summarizer's calls are part of the task
                    self.usage = self.usage + event.usage
                yield self._emit(event)
        except ContextBudgetError as exc:
            self._terminate("failed", f"context budget: {exc}")
        self.h._sync_item_states()

    # ================================================================== decide

    def _decide(self) -> Steps[ModelResponse | None]:
        h = self.h
        context = h.context
        for attempt in (1, 2):
            request = context.build_request(max_output_tokens=h.config.model.max_output_tokens)
            sections = context.sections()
            self._last_prompt_estimate = sum(sections.values())
            yield self._emit(
                PromptSnapshotEvent(
                    sections=sections,
                    total_tokens=self._last_prompt_estimate,
                    budget_tokens=context.budget.context_window,
                    threshold_tokens=context.budget.threshold,
                    items=len(request.items),
                    images=len(request.refreshed.images) if request.refreshed else 0,
                    resident_hash=context.resident_hash(),
                )
            )
            started = time.monotonic()
            try:
                response = yield from self._call_model(request)
            except ContextOverflowError as exc:
                yield self._emit(_model_error_event(exc))
                if attempt == 2:
                    self._terminate(
                        "failed",
                        f"context overflow again after a forced compaction: {exc}",
                    )
                    return None
                yield from self._compact(force=True, reason=f"provider overflow: {exc}")
                if self._termination is not None:
                    return None
                continue
            except ModelError as exc:
                yield self._emit(_model_error_event(exc))
                self._terminate("failed", f"model error ({exc.kind}): {exc}")
                return None
            if response is None:  # cancelled while streaming
                return None
            break
        else:  # pragma: no cover - the loop always returns or breaks
            return None
        duration = time.monotonic() - started
        context.consume_transient()
        response = self._priced(response)
        self.usage = self.usage + response.usage
        reported = response.usage.prompt_tokens
        if reported:
            context.estimator.observe_usage(
                estimated_prompt=self._last_prompt_estimate, reported_prompt=reported
            )
        self._record(
            AssistantItem(
                text=response.text,
                reasoning=response.reasoning,
                tool_calls=response.tool_calls,
                model=response.model,
            )
        )
        if response.text:
            self.last_text = response.text
        yield self._emit(
            ModelResponseEvent(
                model=response.model,
                text=response.text,
                reasoning_chars=sum(len(r.text) for r in response.reasoning),
                tool_calls=[
                    {"id": c.id, "name": c.name, "arguments": c.arguments}
                    for c in response.tool_calls
                ],
                stop_reason=response.stop_reason,
                usage=response.usage,
                duration_s=round(duration, 4),
            )
        )
        return response

    def _call_model(self, request: Any) -> Steps[ModelResponse | None]:
        final: ModelResponse | None = None
        cancelled = self.should_cancel or (lambda: False)
        for chunk in self.h.model.stream(request, cancelled=cancelled):
            if isinstance(chunk, Delta):
                yield self._emit(
                    ModelDeltaEvent(
                        kind=chunk.kind, delta=chunk.text, tool_call_id=chunk.tool_call_id
                    )
                )
            elif isinstance(chunk, RetryNotice):
                yield self._emit(
                    ModelRetryEvent(
                        attempt=chunk.attempt,
                        error_kind=chunk.error_kind,
                        message=chunk.message,
                        wait_s=chunk.wait_s,
                    )
                )
            elif isinstance(chunk, Final):
                final = chunk.response
            if cancelled() and final is None:
                self._terminate("cancelled", "cancelled by the operator during the model call")
                return None
        if final is None and cancelled():
            # The adapter stopped early (cancelled during a retry wait or between chunks).
            self._terminate("cancelled", "cancelled by the operator during the model call")
            return None
        if final is None:
            raise ModelError(f"model {self.h.model.name!r} returned no response")
        return final

    def _priced(self, response: ModelResponse) -> ModelResponse:
        prices = self.h.config.model.prices
        if prices is None or response.usage.cost_usd is not None:
            return response
        usage = response.usage
        cache_read = prices.cache_read if prices.cache_read is not None else prices.input * 0.1
        cache_write = prices.cache_write if prices.cache_write is not None else prices.input * 1.25
        cost = (
            usage.input_tokens * prices.input
            + usage.output_tokens * prices.output
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
        ) / 1e6
        return response.model_copy(update={"usage": usage.model_copy(update={"cost_usd": cost})})

    # ================================================================== execute

    def _execute(self, response: ModelResponse) -> Steps[None]:
        if response.text:
            yield self._emit(ProgressEvent(text=response.text, source="model"))
        first, *extra = response.tool_calls
        yield from self._run_call(first)
        for call in extra:
            yield from self._record_result(
                call,
                None,
                ToolOutput.error(
                    f"not executed: one tool per turn; only {first.name} ({first.id}) ran. "
                    "Request this call again next turn if it is still needed.",
                    "not_executed",
                ),
                executed=False,
                count_failure=False,
            )

    def _run_call(self, call: ToolCall) -> Steps[None]:
        h = self.h
        tool = h.tools.get(call.name)
        if tool is None or tool.hidden:
            if call.name in HIDDEN_HOOK_NAMES or (tool is not None and tool.hidden):
                message = (
                    f"{call.name} is run by the harness itself after physical actions and "
                    "cannot be called; its verdict comes with those actions' results"
                )
                yield from self._record_result(
                    call, None, ToolOutput.error(message, "refused"), executed=False
                )
                return
            matches = close_matches(call.name, h.tools.names(visible_only=True))
            hint = f"; did you mean {', '.join(matches)}?" if matches else ""
            yield from self._record_result(
                call,
                None,
                ToolOutput.error(f"unknown tool {call.name!r}{hint}", "unknown_tool"),
                executed=False,
            )
            return
        if call.raw_arguments is not None:
            output = ToolOutput.error(
                f"arguments for {tool.name} are not a JSON object: {call.raw_arguments[:300]!r}",
                "invalid_arguments",
            )
            yield from self._record_result(call, tool, output, executed=False)
            return
        try:
            arguments = tool.validate(call.arguments)
        except ToolArgumentError as exc:
            yield from self._record_result(
                call, tool, ToolOutput.error(str(exc), "invalid_arguments"), executed=False
            )
            return

        arguments = yield from self._pre_hooks(call, tool, arguments)
        if arguments is None:
            return
        if tool.physical:
            arguments = yield from self._safety(call, tool, arguments)
            if arguments is None:
                return
        if self._cancelled("before the tool call"):
            yield from self._record_result(
                call,
                tool,
                ToolOutput.error("not executed: the task was cancelled", "cancelled"),
                executed=False,
                count_failure=False,
            )
            return

        yield self._emit(
            ToolCallEvent(
                call_id=call.id,
                name=tool.name,
                arguments=to_jsonable(arguments),
                physical=tool.physical,
            )
        )
        outcome = yield from self._invoke(call, tool, arguments, segment=1)
        verdict = None
        if not outcome.output.is_error and not outcome.cancelled:
            outcome, verdict = yield from self._evaluate(call, tool, arguments, outcome)
        yield from self._record_result(
            call,
            tool,
            outcome.output,
            executed=outcome.output.executed,
            duration_s=outcome.duration_s,
            verdict=verdict,
        )
        if outcome.cancelled:
            self._terminate("cancelled", f"cancelled by the operator during {tool.name}")
        elif outcome.end_task is not None:
            end = outcome.end_task
            status: TaskStatus = (
                end.status
                if end.status
                in (  # type: ignore[assignment]
                    "completed",
                    "cancelled",
                    "failed",
                )
                else "failed"
            )
            self._terminate(status, end.reason)

    def _invoke(
        self, call: ToolCall, tool: Tool, arguments: dict[str, Any], *, segment: int
    ) -> Steps[CallOutcome]:
        h = self.h
        interrupt = h._interrupt_robot if tool.physical else None
        outcome = yield from self._steps_returning(
            run_tool(
                tool,
                arguments,
                {"call_id": call.id, "task_id": self.task_id, "turn": self.turn},
                timeout_s=tool.timeout_s or h.config.run.tool_timeout_s,
                should_cancel=self.should_cancel or (lambda: False),
                interrupt=interrupt,
            )
        )
        return outcome

    def _steps_returning(self, generator: Generator[EventBase, None, T]) -> Steps[T]:
        """Like ``yield from`` but stamps each event; returns the generator's value."""
        while True:
            try:
                event = next(generator)
            except StopIteration as stop:
                return stop.value
            yield self._emit(event)

    def _pre_hooks(
        self, call: ToolCall, tool: Tool, arguments: dict[str, Any]
    ) -> Steps[dict[str, Any] | None]:
        for hook in self.h.hooks:
            name = getattr(hook, "name", None) or getattr(hook, "__name__", type(hook).__name__)
            try:
                decision = hook(call, tool, arguments)
            except Exception as exc:
                decision_reason = f"hook {name} raised {type(exc).__name__}: {exc}"
                yield self._emit(
                    HookDecisionEvent(
                        hook=name,
                        call_id=call.id,
                        tool=tool.name,
                        action="block",
                        requested=arguments,
                        reason=decision_reason,
                    )
                )
                yield from self._record_result(
                    call,
                    tool,
                    ToolOutput.error(f"blocked: {decision_reason}", "blocked"),
                    executed=False,
                )
                return None
            if decision is None:
                continue
            yield self._emit(
                HookDecisionEvent(
                    hook=name,
                    call_id=call.id,
                    tool=tool.name,
                    action=decision.action,
                    requested=to_jsonable(arguments),
                    applied=to_jsonable(decision.arguments),
                    reason=decision.reason,
                )
            )
            if decision.action == "block":
                yield from self._record_result(
                    call,
                    tool,
                    ToolOutput.error(f"blocked by {name}: {decision.reason}", "blocked"),
                    executed=False,
                )
                return None
            try:
                arguments = tool.validate(decision.arguments)
            except ToolArgumentError as exc:
                yield from self._record_result(
                    call,
                    tool,
                    ToolOutput.error(f"hook {name} produced invalid arguments: {exc}", "blocked"),
                    executed=False,
                )
                return None
        return arguments

    def _safety(
        self, call: ToolCall, tool: Tool, arguments: dict[str, Any]
    ) -> Steps[dict[str, Any] | None]:
        gate = self.h.safety
        if gate is None:
            decision_outcome, reason = (
                "block",
                "no safety envelope is configured for physical tools",
            )
            applied: dict[str, Any] = {}
            violations = ["no_safety_envelope"]
        else:
            try:
                decision = gate.check(tool, arguments, self.observation)
            except Exception as exc:  # fail closed
                decision_outcome = "block"
                reason = f"safety check failed: {type(exc).__name__}: {exc}"
                applied, violations = {}, ["safety_check_error"]
            else:
                decision_outcome = decision.outcome
                reason = decision.reason
                applied = dict(decision.arguments)
                violations = list(decision.violations)
        yield self._emit(
            SafetyCheckEvent(
                call_id=call.id,
                tool=tool.name,
                outcome=decision_outcome,  # type: ignore[arg-type]
                requested=to_jsonable(arguments),
                applied=to_jsonable(applied),
                violations=violations,
                reason=reason,
            )
        )
        if decision_outcome == "block":
            detail = "; ".join(violations) if violations else reason
            yield from self._record_result(
                call,
                tool,
                ToolOutput.error(f"blocked by the safety envelope: {reason or detail}", "blocked"),
                executed=False,
            )
            return None
        if decision_outcome == "clamp":
            try:
                return tool.validate(applied)
            except ToolArgumentError as exc:
                yield from self._record_result(
                    call,
                    tool,
                    ToolOutput.error(f"blocked: clamped arguments are invalid: {exc}", "blocked"),
                    executed=False,
                )
                return None
        return arguments

    def _evaluate(
        self, call: ToolCall, tool: Tool, arguments: dict[str, Any], outcome: CallOutcome
    ) -> Steps[tuple[CallOutcome, Verdict | None]]:
        h = self.h
        cfg = h.config.evaluation
        if h.evaluator is None or tool.name not in cfg.required_tools:
            return outcome, None
        segment = 1
        while True:
            try:
                observation = h.observation_provider.observe() if h.observation_provider else None
                verdict = h.evaluator.evaluate(
                    tool=tool,
                    arguments=arguments,
                    output=outcome.output,
                    observation=observation,
                    segment=segment,
                )
            except Exception as exc:
                verdict = Verdict(
                    status="failure",
                    evidence=f"evaluator raised {type(exc).__name__}: {exc}",
                    evaluator="harness",
                )
            yield self._emit(
                EvaluationEvent(call_id=call.id, tool=tool.name, verdict=verdict, segment=segment)
            )
            if verdict.status != "process" or tool.name not in cfg.segment_tools:
                break
            if segment >= cfg.max_segments:
                verdict = Verdict(
                    status="failure",
                    evidence=f"still in progress after {segment} segments "
                    f"(max_segments={cfg.max_segments}): {verdict.evidence}",
                    evaluator=verdict.evaluator,
                )
                break
            if self._cancelled(f"between segments of {tool.name}"):
                break
            segment += 1
            yield self._emit(
                ProgressEvent(
                    text=f"{tool.name}: segment {segment} (evaluator: in progress)",
                    source="harness",
                )
            )
            next_outcome = yield from self._invoke(call, tool, arguments, segment=segment)
            next_outcome.duration_s += outcome.duration_s
            outcome = next_outcome
            if outcome.output.is_error or outcome.cancelled:
                return outcome, None
        if h.scene is not None:
            try:
                h.scene.on_verdict(tool.name, arguments, verdict)
            except Exception:
                traceback.print_exc()
        return outcome, verdict

    # ================================================================== record

    def _record(self, item: Item) -> Item:
        item = item.model_copy(update={"task_id": self.task_id, "turn": self.turn})
        self.h._append_item(item)
        return item

    def _record_result(
        self,
        call: ToolCall,
        tool: Tool | None,
        output: ToolOutput,
        *,
        executed: bool = True,
        duration_s: float = 0.0,
        verdict: Verdict | None = None,
        count_failure: bool = True,
    ) -> Steps[None]:
        h = self.h
        full_text = output.render()
        if output.applied is not None:
            full_text += "\napplied: " + json.dumps(to_jsonable(output.applied), sort_keys=True)
        if verdict is not None:
            full_text += f"\nevaluation: {verdict.status}" + (
                f" - {verdict.evidence}" if verdict.evidence else ""
            )
        address = f"archive://{self.task_id}/{call.id}"
        h.store.archive_put(
            address, full_text, task_id=self.task_id, call_id=call.id, tool=call.name
        )
        text, truncated = bounded_text(
            full_text, h.config.context.record_max_chars, address=address
        )
        for image in output.images:
            h.store.put_image(image)
        item = self._record(
            ToolResultItem(
                call_id=call.id,
                name=call.name,
                text=text,
                is_error=output.is_error,
                error_kind=output.error_kind,
                archive=address,
                images=[image.ref() for image in output.images],
                evaluation=verdict,
                physical=bool(tool and tool.physical),
            )
        )
        if truncated:
            h._set_item_state(
                item.id, "truncated", f"output of {len(full_text)} chars exceeds record_max_chars"
            )
        h.context.add_transient_images(output.images)

        failed = output.is_error or (verdict is not None and verdict.status == "failure")
        if count_failure:
            self.consecutive_failures = self.consecutive_failures + 1 if failed else 0
        if executed or output.error_kind in {"blocked", "invalid_arguments", "unknown_tool"}:
            summary = _outcome_summary(output, verdict)
            h.task_notes.record_outcome(self.turn, call.name, summary)
            h._record_tool_experience(call.name, output, verdict, executed=executed)
        yield self._emit(
            ToolResultEvent(
                call_id=call.id,
                name=call.name,
                is_error=output.is_error,
                error_kind=output.error_kind,
                text=text if len(text) <= 2000 else text[:2000] + "...",
                archive=address,
                images=[image.sha256 for image in output.images],
                duration_s=round(duration_s, 4),
                evaluation=verdict,
                executed=executed,
            )
        )

    # ================================================================== replan

    def _poll_replan(self) -> Steps[None]:
        if self.poll_replan is None:
            return
        try:
            revision = self.poll_replan()
        except Exception as exc:
            self._terminate("failed", f"poll_replan raised {type(exc).__name__}: {exc}")
            return
        if revision is None or not str(revision).strip():
            return
        revision = str(revision).strip()
        self.revisions.append(revision)
        self._record(RevisionItem(text=revision))
        self.h.task_notes.update(add_notes=[f"instruction revised: {revision}"])
        yield self._emit(ReplanEvent(revision=revision))

    # ================================================================== finish

    def _finish(self) -> Steps[None]:
        """Finalize (robot stopped, store updated), then emit the trailing events."""
        yield from (self._emit(event) for event in self._finalize())

    def _finalize(self) -> Iterator[EventBase]:
        """Side effects first, events after: closing the stream mid-way loses nothing."""
        if self._finalized:
            return
        self._finalized = True
        termination = self._termination or _Termination("failed", "the loop ended unexpectedly")
        h = self.h
        h._stop_robot()
        report = termination.report or self._fallback_report(termination)
        consolidation = h._consolidate_memory(self, termination.status, report)
        done = DoneEvent(
            status=termination.status,
            termination_reason=termination.reason,
            report=report,
            turns=self.turn,
            usage=self.usage,
        )
        self.result = done
        h._end_task_resident()
        h.store.end_task(
            self.task_id,
            status=termination.status,
            reason=termination.reason,
            report=report,
            turns=self.turn,
            usage=self.usage.model_dump(),
        )
        if consolidation is not None:
            yield consolidation
        yield done

    def _fallback_report(self, termination: _Termination) -> str:
        text = f"Task ended ({termination.status}): {termination.reason}."
        if self.last_text:
            text += f" Last model text: {self.last_text}"
        return text


# ====================================================================== helpers


def _model_error_event(exc: ModelError) -> ModelErrorEvent:
    return ModelErrorEvent(
        kind=exc.kind, message=str(exc), status_code=exc.status_code, retryable=exc.retryable
    )


def _outcome_summary(output: ToolOutput, verdict: Verdict | None) -> str:
    if verdict is not None:
        head = verdict.status
        if verdict.evidence:
            head += f" ({verdict.evidence[:80]})"
        return head
    if output.is_error:
        return f"error {output.error_kind}: {output.render()[:80]}"
    return "ok: " + output.render()[:80].replace("\n", " ")


def render_observation(observation: Observation) -> str:
    """Compact text of an observation's state and safety readings (images go separately)."""
    lines = [f"Observation at t={observation.timestamp:.3f}"]
    if observation.images:
        lines.append("cameras: " + ", ".join(sorted(observation.images)))
    for key, value in sorted(observation.state.items()):
        if key in CALIBRATION_STATE_KEYS:
            continue
        lines.append(f"{key}: {_fmt(value)}")
    if observation.safety:
        readings = ", ".join(
            f"{k}={'missing' if v is None else f'{v:.3f}'}"
            for k, v in sorted(observation.safety.items())
        )
        lines.append(f"safety: {readings}")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)

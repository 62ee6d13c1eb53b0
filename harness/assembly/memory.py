"""Durable memory for a session: the store, with its model-backed helpers.

``memory/`` must not import the harness, so the two places where memory asks a model
something live here, as small objects the :class:`~memory.store.MemoryStore` accepts:

- :class:`ModelLessonProposer` asks for lessons from a finished task (one call with
  ``purpose="consolidate"``), validates the JSON envelope, and gets one repair round for a
  malformed answer. Each lesson inside is then judged alone by the store, so one bad entry
  never costs the others.
- :class:`ModelLedgerSummarizer` turns a changed tool ledger into a few lines
  (``purpose="summarize"``).

Each helper's ``cancelled`` attribute is the operator's cancel while the session uses it
(consolidation, reading memory into Resident); its calls are watched
(:func:`harness.cancel.call_cancellable`) so a cancel wins within ``POLL_S``, raising
:class:`~harness.cancel.Cancelled` through the store (which lets it pass: no fallback runs
and nothing is written after a cancel).

A model that declares ``supports_summaries = False`` (the offline planner: it plans robot
actions and writes no prose) is not used; the store then falls back to its rule-based
consolidator and deterministic digests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.cancel import call_cancellable
from harness.config import HarnessConfig
from harness.context import bounded_text
from harness.errors import ConfigError, HarnessError
from harness.messages import AssistantItem, InstructionItem, ModelRequest, SystemBlock, Usage
from harness.prompts import CONSOLIDATION_SYSTEM_PROMPT, LEDGER_SUMMARY_SYSTEM_PROMPT
from harness.providers.base import Model, can_summarize, complete
from harness.redact import Redactor
from memory.store import MemoryStore
from memory.task_record import TaskRecord

__all__ = [
    "ConsolidationOutputError",
    "ModelLedgerSummarizer",
    "ModelLessonProposer",
    "build_memory",
    "can_summarize",
    "parse_lessons_json",
]

MAX_RECORD_OUTCOMES = 60
_FENCE = re.compile(r"^```[\w-]*\s*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)


class ConsolidationOutputError(HarnessError):
    """The model's lesson proposal was not the JSON object asked for, even after repair."""


class _Envelope(BaseModel):
    """The top level of a proposal. Entries stay raw: the store validates each alone."""

    model_config = ConfigDict(extra="ignore")

    lessons: list[Any]


def parse_lessons_json(text: str) -> list[Any]:
    """The ``lessons`` list of a proposal (code fences and surrounding prose tolerated);
    ValueError with a readable reason when there is none."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group("body").strip()
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the answer")
    try:
        data = json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg} at position {exc.pos}") from None
    try:
        return _Envelope.model_validate(data).lessons
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise ValueError(f"{where}: {first['msg']}") from None


def _render_record(record: TaskRecord) -> str:
    outcomes = record.outcomes[-MAX_RECORD_OUTCOMES:]
    payload = {
        "instruction": record.instruction,
        "status": record.status,
        "report": bounded_text(record.report, 2000, address=None)[0],
        "task_notes": bounded_text(record.notes, 3000, address=None)[0],
        "tool_outcomes": [
            {
                "turn": outcome.turn,
                "tool": outcome.tool,
                "executed": outcome.executed,
                "ok": outcome.ok,
                "evaluator_verdict": outcome.verdict,
                "detail": outcome.detail[:200],
            }
            for outcome in outcomes
        ],
    }
    if len(record.outcomes) > len(outcomes):
        payload["omitted_earlier_outcomes"] = len(record.outcomes) - len(outcomes)
    return "The finished task:\n" + json.dumps(payload, indent=1, ensure_ascii=False)


class ModelLessonProposer:
    """Proposes lessons with one model call (plus one repair round if the JSON is bad)."""

    def __init__(self, model: Model, *, max_output_tokens: int = 800, repairs: int = 1) -> None:
        self.model = model
        self.name = f"model {model.name!r}"
        self.max_output_tokens = max_output_tokens
        self.repairs = repairs
        self.usage = Usage()
        """Tokens of the calls made since the harness last drained them (task cost)."""
        self.cancelled: Callable[[], bool] | None = None
        """The operator's cancel while the session consolidates (set by the session)."""

    def propose(self, record: TaskRecord) -> list[Any]:
        if not record.outcomes:
            return []  # nothing happened that a lesson could rest on; save the call
        items: list[Any] = [InstructionItem(text=_render_record(record))]
        problem = ""
        for _ in range(1 + self.repairs):
            request = ModelRequest(
                system=[SystemBlock(name="consolidation", text=CONSOLIDATION_SYSTEM_PROMPT)],
                items=items,
                max_output_tokens=self.max_output_tokens,
                purpose="consolidate",
            )
            response = _complete(self.model, request, self.cancelled, "lesson proposal")
            self.usage = self.usage + response.usage
            answer = response.text
            try:
                return parse_lessons_json(answer)
            except ValueError as exc:
                problem = str(exc)
                items = [
                    *items,
                    AssistantItem(text=answer[:4000]),
                    InstructionItem(
                        text=f"That answer is unusable ({problem}). Reply with only the JSON "
                        'object {"lessons": [...]} as specified.'
                    ),
                ]
        raise ConsolidationOutputError(f"lesson proposal is not valid JSON: {problem}")


class ModelLedgerSummarizer:
    """Summarizes one tool ledger with one model call."""

    def __init__(self, model: Model, *, max_output_tokens: int = 300) -> None:
        self.model = model
        self.name = str(model.name)
        self.max_output_tokens = max_output_tokens
        self.usage = Usage()
        """Tokens of the calls made since the harness last drained them (task cost)."""
        self.cancelled: Callable[[], bool] | None = None
        """The operator's cancel while the session reads memory (set by the session)."""

    def summarize(self, tool: str, ledger: str, *, max_chars: int) -> str:
        request = ModelRequest(
            system=[SystemBlock(name="ledger_summary", text=LEDGER_SUMMARY_SYSTEM_PROMPT)],
            items=[
                InstructionItem(
                    text=f"Ledger of the tool {tool!r} (answer in under {max_chars} "
                    f"characters):\n\n{ledger}"
                )
            ],
            max_output_tokens=self.max_output_tokens,
            purpose="summarize",
        )
        response = _complete(self.model, request, self.cancelled, f"the {tool} ledger summary")
        self.usage = self.usage + response.usage
        text = response.text.strip()
        if not text:
            raise ValueError(f"the summarizer returned no text for {tool!r}")
        return text


def _complete(
    model: Model, request: ModelRequest, cancelled: Callable[[], bool] | None, what: str
) -> Any:
    return call_cancellable(
        lambda worker_cancelled: complete(model, request, cancelled=worker_cancelled),
        cancelled=cancelled,
        what=what,
    )


def build_memory(
    config: HarnessConfig, *, model: Any, redactor: Redactor | None = None
) -> MemoryStore | None:
    """Durable memory in ``memory.path``. ``model`` (the summarizer, else the decision
    model) proposes lessons and summarizes ledgers when it can write prose; otherwise the
    store's rule-based consolidator and deterministic digests are used. ``redactor`` (the
    session's) is applied to everything the store writes: its files are read back into
    later sessions' Resident context, so a secret kept there would travel on."""
    if not config.memory.enabled:
        return None
    folder = config.resolve_path(config.memory.path)
    helper = model if can_summarize(model) else None
    try:
        return MemoryStore(
            folder,
            proposer=ModelLessonProposer(helper) if helper is not None else None,
            summarizer=ModelLedgerSummarizer(helper) if helper is not None else None,
            min_confidence=config.memory.consolidation_min_confidence,
            redact=redactor.text if redactor is not None else None,
        )
    except OSError as exc:
        raise ConfigError(
            f"memory.path: cannot use {str(folder)!r} as the memory folder: {exc}",
            key="memory.path",
            value=config.memory.path,
        ) from exc

"""Provider-neutral message types: what the model sees and says.

This module is the single owner of the conversation format. Provider adapters translate
these types to and from their wire format and nothing else; the loop, the context and the
compactor only ever handle these types.

Conversation items are frozen pydantic models discriminated by ``kind``. Every item
records the task and turn it belongs to, so a turn (a model decision plus the result of the
one tool it selected) can always be kept or folded as a whole. The format is versioned
(``FORMAT_VERSION``) because run stores outlive the code that wrote them.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from harness.image_metadata import strip_metadata

__all__ = [
    "FORMAT_VERSION",
    "AssistantItem",
    "CheckpointItem",
    "CheckpointSource",
    "ImagePart",
    "ImageRef",
    "IndexPage",
    "InstructionItem",
    "Item",
    "ModelRequest",
    "ModelResponse",
    "NoticeItem",
    "ReasoningBlock",
    "RefreshedBlock",
    "RevisionItem",
    "SystemBlock",
    "TaskNotesItem",
    "ToolCall",
    "ToolResultItem",
    "ToolSpec",
    "Usage",
    "Verdict",
    "new_id",
]

FORMAT_VERSION = 1
"""Version of the item format written to run stores; bump with a migration on change."""


def new_id(prefix: str) -> str:
    """A short unique id with a readable prefix (``call_3f2a...``)."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- media


class ImageRef(_Frozen):
    """A reference to an image stored once, by content hash, in the run store.

    Conversation items keep only references: image bytes reach exactly the model call
    that consumes them (through :class:`RefreshedBlock`) and then leave the context.
    """

    sha256: str
    media_type: str = "image/jpeg"
    width: int
    height: int
    label: str = ""

    def placeholder(self) -> str:
        """Short text that stands in for the image once it has left the context."""
        name = f"{self.label} " if self.label else ""
        return f"[image {name}{self.width}x{self.height} image://{self.sha256[:16]}]"


class ImagePart(_Frozen):
    """An encoded image ready to send (JPEG or PNG bytes plus what the model needs)."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="base64")

    data: bytes = Field(repr=False)
    """The encoded bytes, without metadata (EXIF, XMP, comments, PNG text chunks: see
    :mod:`harness.image_metadata`); an image never carries text beside its pixels."""
    media_type: str = "image/jpeg"
    width: int
    height: int
    label: str = ""

    @field_validator("data")
    @classmethod
    def _without_metadata(cls, data: bytes) -> bytes:
        return strip_metadata(data)

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def ref(self) -> ImageRef:
        return ImageRef(
            sha256=self.sha256,
            media_type=self.media_type,
            width=self.width,
            height=self.height,
            label=self.label,
        )


# --------------------------------------------------------------------------- tool calls


class ToolCall(_Frozen):
    """One tool call requested by the model.

    ``arguments`` is the parsed JSON object; when the model sent text that is not a JSON
    object, ``arguments`` is empty and ``raw_arguments`` keeps the text so the validation
    error the model reads can quote it. ``cut`` marks a call the output limit stopped
    before it was whole: ``raw_arguments`` then holds the partial arguments as they
    arrived, and the call is never run (its result says the limit cut it).
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    cut: bool = False


class ToolSpec(_Frozen):
    """A tool as offered to the model: name, description and full JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class ReasoningBlock(_Frozen):
    """Model reasoning kept with its assistant turn.

    Anthropic requires thinking blocks (with their ``signature``) to be sent back unchanged
    in a tool-use continuation; ``redacted`` holds an encrypted ``redacted_thinking`` payload.
    OpenAI-compatible servers expose ``reasoning_content`` as plain text.
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    provider: str = ""


class Verdict(_Frozen):
    """The outcome of ``evaluate_run`` after a physical tool."""

    status: Literal["success", "failure", "process"]
    evidence: str = ""
    evaluator: str = ""


# --------------------------------------------------------------------------- items


class _ItemBase(_Frozen):
    id: str = Field(default_factory=lambda: new_id("item"))
    task_id: str = ""
    turn: int = 0
    created_at: float = Field(default_factory=time.time)
    episode: str = ""
    """The episode (``begin_episode``) that was active when the item was recorded."""


class InstructionItem(_ItemBase):
    """The user's instruction that starts a task.

    ``archive`` is set when the instruction was too large for the context: ``text`` is then
    a bounded, authoritative reference (beginning, end, and the address where ``recall``
    reads the exact instruction).
    """

    kind: Literal["instruction"] = "instruction"
    text: str
    images: list[ImageRef] = Field(default_factory=list)
    archive: str | None = None


class RevisionItem(_ItemBase):
    """An instruction revision accepted through ``poll_replan`` while the task runs
    (``archive`` as for :class:`InstructionItem`)."""

    kind: Literal["instruction_revision"] = "instruction_revision"
    text: str
    archive: str | None = None


class TaskNotesItem(_ItemBase):
    """A snapshot of the Task Notes, appended only when the notes changed."""

    kind: Literal["task_notes"] = "task_notes"
    text: str
    version: int = 0


class AssistantItem(_ItemBase):
    """One model decision: text, reasoning and the tool call(s) it requested."""

    kind: Literal["assistant"] = "assistant"
    text: str = ""
    reasoning: list[ReasoningBlock] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model: str = ""


class ToolResultItem(_ItemBase):
    """The compact result of one tool call, as the model sees it.

    ``text`` may be a bounded head+tail of the exact output; ``archive`` is then the
    address (``archive://task/call``) where ``recall`` reads the exact original.
    """

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    text: str
    is_error: bool = False
    error_kind: str | None = None
    archive: str | None = None
    images: list[ImageRef] = Field(default_factory=list)
    evaluation: Verdict | None = None
    physical: bool = False


class IndexPage(_Frozen):
    """One archived page of a checkpoint's address index (see ``harness.context.compaction.index``).

    A level-1 page lists folded exchanges, one line each with the address of the exact
    output; a level-``n`` page lists pages of level ``n - 1``.
    """

    address: str
    level: int = 1
    entries: int
    """Exchanges the page covers (through its sub-pages for levels above 1)."""
    lines: int
    chars: int
    first: str
    """``task t<turn>`` of the oldest exchange covered."""
    last: str


class CheckpointSource(_Frozen):
    """Where a checkpoint came from, so later compactions and inspection are explicit.

    There is one rolling checkpoint: an update replaces the previous one, and the metadata
    covers the union (turns, items folded, rounds, every model that wrote part of it);
    ``previous_checkpoint`` names the replaced one, whose text stays in the archive.
    """

    first_turn: int
    last_turn: int
    task_ids: list[str]
    items_folded: int
    rounds: int
    model: str
    """The writer of the current note (a model name, or ``deterministic``)."""
    mode: Literal["summary", "deterministic"]
    created_at: float = Field(default_factory=time.time)
    previous_checkpoint: str | None = None
    models: list[str] = Field(default_factory=list)
    """Every writer that contributed to the note since the first checkpoint."""
    index: list[IndexPage] = Field(default_factory=list)
    """The archived pages of the harness-written address index, oldest first."""
    exchanges: int = 0
    """Folded tool exchanges the index covers (pages and the inline lines)."""
    unindexed: int = 0
    """Folded exchanges listed nowhere because there was no run store to archive pages."""


class CheckpointItem(_ItemBase):
    """A summary that replaced an older prefix of Accumulated context."""

    kind: Literal["checkpoint"] = "checkpoint"
    text: str
    source: CheckpointSource


class NoticeItem(_ItemBase):
    """A message from the harness to the model (e.g. a resumed session, a budget warning).

    ``purpose`` says which rule wrote it, so later passes recognise their own items: an
    archived episode's record, the model's condensed memory, the rolling summary of
    collapsed pinned notes, or the one-time pressure nudge.
    """

    kind: Literal["notice"] = "notice"
    text: str
    purpose: Literal["notice", "episode", "memory", "pinned", "nudge"] = "notice"


Item = Annotated[
    InstructionItem
    | RevisionItem
    | TaskNotesItem
    | AssistantItem
    | ToolResultItem
    | CheckpointItem
    | NoticeItem,
    Field(discriminator="kind"),
]
"""Any Accumulated conversation item."""


# --------------------------------------------------------------------------- requests


class SystemBlock(_Frozen):
    """One named part of the Resident prefix (system prompt, profile, memory, skills...)."""

    name: str
    text: str


class RefreshedBlock(_Frozen):
    """What is replaced before every model decision: the scene Brief and the observation.

    ``images`` also carries the transient images of the previous tool result and of the
    instruction, which are shown to this one call only.
    """

    brief: str = ""
    observation: str = ""
    images: list[ImagePart] = Field(default_factory=list)

    def text(self) -> str:
        parts = []
        if self.brief:
            parts.append(self.brief)
        if self.observation:
            parts.append(self.observation)
        return "\n\n".join(parts)


class ModelRequest(_Frozen):
    """A provider-neutral request: Resident, then Accumulated items, then Refreshed.

    ``stable_items`` counts the leading items that have not changed since the previous
    request; adapters with explicit prompt caching put their breakpoint after them.
    """

    system: list[SystemBlock]
    tools: list[ToolSpec] = Field(default_factory=list)
    items: list[Item] = Field(default_factory=list)
    refreshed: RefreshedBlock | None = None
    stable_items: int = 0
    max_output_tokens: int | None = None
    purpose: Literal["decide", "summarize", "evaluate", "consolidate"] = "decide"

    def system_text(self) -> str:
        return "\n\n".join(block.text for block in self.system if block.text)


class Usage(BaseModel):
    """Token usage of one or more model calls. Addable.

    The three input counts are disjoint, because they are billed at different prices:
    ``input_tokens`` is the *uncached* input, ``cache_read_tokens`` what was read from the
    provider's prompt cache and ``cache_write_tokens`` what was written to it.
    :attr:`prompt_tokens` is their sum, the whole prompt. Adapters convert: OpenAI's
    ``prompt_tokens`` includes its ``cached_tokens``; Anthropic's ``input_tokens`` already
    excludes cache reads and writes.
    """

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    """Uncached input tokens."""
    output_tokens: int = 0
    """Output tokens, reasoning included."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    unreported_requests: int = 0
    """Requests whose provider sent no token usage (many local servers do not when
    streaming): their tokens are unknown, not zero."""
    cost_usd: float | None = None

    @property
    def complete(self) -> bool:
        """Every request reported its usage, so the token counts are the whole truth."""
        return self.unreported_requests == 0

    def describe(self) -> str:
        """One line for people: calls, tokens, and what the provider did not report."""
        text = (
            f"{self.requests} model calls, {self.input_tokens} input (+{self.cache_read_tokens} "
            f"cached) / {self.output_tokens} output tokens"
        )
        if self.unreported_requests:
            text += (
                f"; usage not reported for {self.unreported_requests} of {self.requests} calls "
                "(their tokens are unknown)"
            )
        if self.cost_usd is not None:
            text += f", ${self.cost_usd:.4f}"
        return text

    @field_validator("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        return max(0, value)

    def __add__(self, other: Usage) -> Usage:
        cost: float | None
        if self.cost_usd is None and other.cost_usd is None:
            cost = None
        else:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            requests=self.requests + other.requests,
            unreported_requests=self.unreported_requests + other.unreported_requests,
            cost_usd=cost,
        )

    @property
    def prompt_tokens(self) -> int:
        """All input tokens of the request, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @field_serializer("cost_usd")
    def _round_cost(self, value: float | None) -> float | None:
        return None if value is None else round(value, 6)


class ModelResponse(_Frozen):
    """A provider-neutral response: text, reasoning, tool calls, usage, stop reason."""

    text: str = ""
    reasoning: list[ReasoningBlock] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: str = "end_turn"
    model: str = ""

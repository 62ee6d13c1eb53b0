"""Built-in tools: talking to the user, keeping Task Notes, recalling archived output,
loading skills, the episode and condensation tools (:mod:`harness.runtime.workspace`), and
(``subagents.enabled``) delegating to a sub-agent.

They are ordinary :class:`~harness.tools.Tool` objects built over the session's services,
so they go through the same validation, events and error handling as any other tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.context.admission import admit_skill
from harness.context.compaction.archive import RECALL_MAX_CHARS
from harness.events import NotificationEvent, SkillLoadedEvent, UserQueryEvent
from harness.protocols import SearchableArchive
from harness.runtime.delegation.delegate import delegate_tool
from harness.runtime.workspace import workspace_tools
from harness.tools import EndTask, Tool, ToolCancelledError, ToolContext, ToolOutput, close_matches

if TYPE_CHECKING:
    from harness.runtime.session import Session

__all__ = ["RECALL_MAX_LIMIT", "builtin_tools", "query_user_tool"]

RECALL_MAX_LIMIT = RECALL_MAX_CHARS
"""One recall reads at most this much: a whole page of a checkpoint's index."""
SEARCH_MAX_HITS = 25


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QueryUserArgs(_Args):
    question: str = Field(min_length=1, description="One clear question for the operator.")


class NotifyUserArgs(_Args):
    message: str = Field(min_length=1, description="What the operator should know.")
    level: Literal["info", "warning", "error"] = "info"


class UpdateTaskNotesArgs(_Args):
    phase: str | None = Field(None, description="The current phase, e.g. 'placing red cube'.")
    add_notes: list[str] = Field(default_factory=list, description="Facts or plans to keep.")
    remove_notes: list[str] = Field(
        default_factory=list, description="Notes (exact text) that no longer hold."
    )


class RecallArgs(_Args):
    address: str = Field(pattern=r"^archive://\S+$", description="An archive:// address.")
    offset: int = Field(0, ge=0, description="First character to return.")
    limit: int = Field(4000, ge=1, le=RECALL_MAX_LIMIT, description="Characters to return.")


class SearchArchiveArgs(_Args):
    query: str = Field(
        min_length=2,
        max_length=200,
        description="Text to find (case-insensitive), e.g. E-4411, or a tool name and its "
        "arguments, e.g. 'read_sensor_log index 7'.",
    )
    limit: int = Field(8, ge=1, le=SEARCH_MAX_HITS, description="Most hits to return.")


class LoadSkillArgs(_Args):
    name: str = Field(min_length=1, description="A skill name from the Skill Catalog.")


class LoadSkillResourceArgs(_Args):
    name: str = Field(min_length=1, description="A skill name from the Skill Catalog.")
    resource: str = Field(min_length=1, description="A file path inside the skill's folder.")


def builtin_tools(session: Session) -> list[Tool]:
    """The built-in tools for one session (``query_user`` only with a user channel)."""
    tools = [
        Tool(
            "update_task_notes",
            "Update the Task Notes (phase, notes to keep). They stay visible across "
            "compactions, so record plans and facts you will need later.",
            lambda ctx, **kw: record_task_notes(session, ctx, **kw),
            input_model=UpdateTaskNotesArgs,
            source="builtin",
        ),
        Tool(
            "notify_user",
            "Tell the operator something without waiting for an answer.",
            lambda ctx, **kw: _notify_user(session, ctx, **kw),
            input_model=NotifyUserArgs,
            source="builtin",
        ),
        Tool(
            "recall",
            "Read an exact slice of an archived tool output by its archive:// address.",
            lambda **kw: _recall(session, **kw),
            input_model=RecallArgs,
            source="builtin",
        ),
    ]
    if isinstance(session.store, SearchableArchive):
        tools.append(
            Tool(
                "search_archive",
                "Search the exact outputs of every earlier tool call in this session, "
                "including ones no longer in context, for a text (an object ref, a code, a "
                "value), or find a call by its tool name and arguments "
                "('read_sensor_log index 7'). Returns archive:// addresses with the "
                "matching line; read more with recall.",
                lambda **kw: _search_archive(session, **kw),
                input_model=SearchArchiveArgs,
                source="builtin",
                optional="archive search",
            )
        )
    if session.config.context.episodes.enabled:
        tools.extend(workspace_tools(session))
    if session.user_channel is not None:
        tools.insert(0, query_user_tool(session))
    if session.skills is not None:
        tools.append(
            Tool(
                "load_skill",
                "Load a skill from the Skill Catalog; its instructions stay available for "
                "the rest of the task.",
                lambda ctx, **kw: _load_skill(session, ctx, **kw),
                input_model=LoadSkillArgs,
                source="builtin",
            )
        )
        tools.append(
            Tool(
                "load_skill_resource",
                "Read a resource file that a loaded skill refers to.",
                lambda **kw: _load_skill_resource(session, **kw),
                input_model=LoadSkillResourceArgs,
                source="builtin",
            )
        )
    if session.config.subagents.enabled:
        tools.append(delegate_tool(session))
    return tools


def query_user_tool(session: Session) -> Tool:
    """``query_user``: ask the session's user channel and wait (offered only while the
    session has one; a console attached later registers it itself)."""
    return Tool(
        "query_user",
        "Ask the operator a question and wait for the answer. Use only when the "
        "evidence cannot settle it; the task ends if nobody answers in time.",
        lambda ctx, **kw: _query_user(session, ctx, **kw),
        input_model=QueryUserArgs,
        source="builtin",
        timeout_s=session.config.run.query_user_timeout_s + 5.0,
    )


def _query_user(session: Session, ctx: ToolContext, *, question: str) -> str:
    channel = session.user_channel
    assert channel is not None
    timeout_s = session.config.run.query_user_timeout_s
    ctx.emit(UserQueryEvent(question=question, status="asked"))
    answer = channel.ask(question, timeout_s=timeout_s, cancelled=lambda: ctx.cancelled)
    if ctx.cancelled:
        ctx.emit(UserQueryEvent(question=question, status="cancelled"))
        raise ToolCancelledError("cancelled while waiting for the user")
    if answer is None:
        ctx.emit(UserQueryEvent(question=question, status="timeout"))
        raise EndTask(
            "failed",
            f"query_user: no answer within {timeout_s:g} s to {question!r}",
            result=f"no answer from the user within {timeout_s:g} s",
        )
    ctx.emit(UserQueryEvent(question=question, answer=answer, status="answered"))
    return f"The user answered: {answer}"


def _notify_user(session: Session, ctx: ToolContext, *, message: str, level: str) -> str:
    if session.user_channel is not None:
        session.user_channel.notify(message, level)
    ctx.emit(NotificationEvent(message=message, level=level))  # type: ignore[arg-type]
    return "notified"


def record_task_notes(
    session: Session,
    ctx: ToolContext,
    *,
    phase: str | None,
    add_notes: list[str],
    remove_notes: list[str],
) -> str:
    lane = session.lane(ctx.task_id)
    notes = lane.state.notes if lane is not None else session.last_notes
    changed = notes.update(phase=phase, add_notes=add_notes, remove_notes=remove_notes)
    if not changed:
        return "Task Notes unchanged"
    # Not the internal version: it also moves with every recorded outcome, so "version 3"
    # after the model's first update reads like a count of the model's own updates.
    return f"Task Notes updated (phase: {notes.phase}; {len(notes.notes)} notes)"


def _recall(session: Session, *, address: str, offset: int, limit: int) -> ToolOutput:
    text = session.read_archive(address)
    if text is None:  # unknown, or another session's: the same answer either way
        return ToolOutput.error(f"no archived output at {address}", "not_found")
    end = min(len(text), offset + limit)
    if offset >= len(text) and len(text) > 0:
        return ToolOutput.error(
            f"offset {offset} is past the end of {address} ({len(text)} characters)",
            "out_of_range",
        )
    header = f"{address} characters {offset}-{end} of {len(text)}"
    if end < len(text):
        header += f"; continue with offset={end}"
    return ToolOutput(text=f"[{header}]\n{text[offset:end]}")


def _search_archive(session: Session, *, query: str, limit: int) -> ToolOutput:
    hits = session.search_archive(query, limit=limit)
    if not hits:
        return ToolOutput(text=f"no archived output of this session contains {query!r}")
    lines = [f"{len(hits)} archived output(s) contain {query!r} (newest first):"]
    for hit in hits:
        times = f" x{hit.matches}" if hit.matches > 1 else ""
        lines.append(f"- {hit.address} ({hit.tool}{times}): {hit.snippet}")
    return ToolOutput(text="\n".join(lines))


def _load_skill(session: Session, ctx: ToolContext, *, name: str) -> ToolOutput:
    library = session.skills
    assert library is not None
    key = f"skill:{name}"
    lane = session.lane(ctx.task_id)
    context = lane.context if lane is not None else session.context  # a sub-agent's own view
    if context.has_resident(key):
        return ToolOutput(text=f"skill {name!r} is already loaded (no change)")
    try:
        body = library.body(name)
    except KeyError:
        matches = close_matches(name, library.names())
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        return ToolOutput.error(f"unknown skill {name!r}{hint}", "unknown_skill")
    text = f"Skill {name}\n{body}"
    admission = admit_skill(context, name=name, text=text)
    if not admission.admitted:
        return ToolOutput.error(admission.refusal(), "admission_refused")
    tokens = admission.needed
    context.set_resident(key, text)
    ctx.emit(SkillLoadedEvent(name=name, tokens=tokens))
    return ToolOutput(text=f"skill {name!r} loaded ({tokens} tokens); follow it from now on")


def _load_skill_resource(session: Session, *, name: str, resource: str) -> ToolOutput:
    library = session.skills
    assert library is not None
    try:
        text = library.resource(name, resource, max_chars=session.config.context.record_max_chars)
    except KeyError as exc:
        return ToolOutput.error(str(exc).strip("'\""), "unknown_resource")
    except ValueError as exc:
        return ToolOutput.error(str(exc), "invalid_resource")
    return ToolOutput(text=text)

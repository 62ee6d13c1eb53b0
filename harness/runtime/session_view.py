"""The Harness's view of its session's parts: each part (model, tools, driver, safety
envelope, scene, skills, memory, store, ...) as a property that reads through to the
:class:`~harness.runtime.session.Session`, and the few a script may swap between tasks
(the decision model, the tool sources).

:class:`~harness.runtime.harness.Harness` inherits these; they live apart so the facade
reads as what it does (build, run, resume, delegate, close).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from embodiment.types import Driver
    from harness.context import Context
    from harness.context.compaction.compactor import Compactor
    from harness.protocols import (
        Evaluator,
        MemoryProvider,
        ObservationProvider,
        PreHook,
        RunStore,
        SafetyGate,
        SceneProvider,
        SkillLibrary,
        ToolSource,
        UserChannel,
    )
    from harness.providers.base import Model
    from harness.runtime.session import Session
    from harness.tools import ToolRegistry
    from harness.world.task_check import TaskCheck
    from memory.task_notes import TaskNotes

__all__ = ["SessionView"]


class SessionView:
    """Read-through properties over ``self.session`` (see the module docstring)."""

    session: Session

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def model(self) -> Model:
        return self.session.model

    @model.setter
    def model(self, model: Model) -> None:
        """Swap the decision model between tasks (the summarizer stays as built)."""
        self.session.model = model

    @property
    def compaction_model(self) -> Model:
        return self.session.compaction_model

    @property
    def subagent_model(self) -> Model | None:
        """The sub-agents' own model (``subagents.model``); None: they use ``model``."""
        return self.session.subagent_model

    @property
    def context(self) -> Context:
        return self.session.context

    @property
    def compactor(self) -> Compactor:
        return self.session.compactor

    @property
    def store(self) -> RunStore:
        return self.session.store

    @property
    def tools(self) -> ToolRegistry:
        return self.session.tools

    @property
    def tool_sources(self) -> list[ToolSource]:
        return self.session.tool_sources

    @tool_sources.setter
    def tool_sources(self, sources: Iterable[ToolSource]) -> None:
        """Replace the sources; their tools are registered at the next task's start."""
        self.session.tool_sources = list(sources)

    @property
    def driver(self) -> Driver | None:
        return self.session.driver

    @property
    def observation_provider(self) -> ObservationProvider | None:
        return self.session.observation_provider

    @property
    def safety(self) -> SafetyGate | None:
        return self.session.safety

    @property
    def scene(self) -> SceneProvider | None:
        return self.session.scene

    @property
    def skills(self) -> SkillLibrary | None:
        return self.session.skills

    @property
    def memory(self) -> MemoryProvider | None:
        return self.session.memory

    @property
    def evaluator(self) -> Evaluator | None:
        return self.session.evaluator

    @property
    def task_check(self) -> TaskCheck | None:
        """The check of the whole task when the model ends it (``done.outcome``)."""
        return self.session.task_check

    @property
    def hooks(self) -> list[PreHook]:
        return self.session.hooks

    @property
    def user_channel(self) -> UserChannel | None:
        return self.session.user_channel

    @property
    def profile_text(self) -> str:
        return self.session.profile_text

    @property
    def task_notes(self) -> TaskNotes:
        """The Task Notes of the running task, or of the last one."""
        return self.session.last_notes

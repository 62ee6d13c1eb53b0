"""A driver that only reads: what the arm does goes through another door (an MCP server
that is the hardware, a state file the arm publishes), so this one has no actions, and
connecting, stopping and disconnecting are nothing to do. Each user says where its
readings come from (``observe``)."""

from __future__ import annotations

from typing import Any

from embodiment.types import ActionResult, ActionSpec, Observation

__all__ = ["ReadingsOnlyDriver"]


class ReadingsOnlyDriver:
    """No actions of its own; ``observe`` is the subclass's."""

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None: ...

    def capabilities(self) -> list[ActionSpec]:
        return []

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        return ActionResult(ok=False, message="no actions")

    def observe(self) -> Observation:
        raise NotImplementedError

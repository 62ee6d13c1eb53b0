"""embodied-harness: a runtime that lets a language model drive a robot, safely, one tool
call at a time, over long tasks, with a bounded context window.

Names are imported on first use, so ``import harness.messages`` (or any other core
module) does not load the runtime, the providers or the simulator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodiment.lazy_names import lazy_names

if TYPE_CHECKING:
    from harness.config import HarnessConfig, load_config
    from harness.errors import (
        ConfigError,
        ContextBudgetError,
        HarnessBusyError,
        HarnessClosedError,
        HarnessError,
        ModelError,
    )
    from harness.events import DoneEvent, Event
    from harness.runtime.delegation.delegate import Handoff
    from harness.runtime.harness import Harness, RunResult, TaskStream
    from harness.tools import Tool, ToolContext, ToolOutput, tool

__all__ = [
    "ConfigError",
    "ContextBudgetError",
    "DoneEvent",
    "Event",
    "Handoff",
    "Harness",
    "HarnessBusyError",
    "HarnessClosedError",
    "HarnessConfig",
    "HarnessError",
    "ModelError",
    "RunResult",
    "TaskStream",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "load_config",
    "tool",
]

__version__ = "0.1.0"

_HOMES = {
    "HarnessConfig": "harness.config",
    "load_config": "harness.config",
    "ConfigError": "harness.errors",
    "ContextBudgetError": "harness.errors",
    "HarnessBusyError": "harness.errors",
    "HarnessClosedError": "harness.errors",
    "HarnessError": "harness.errors",
    "ModelError": "harness.errors",
    "DoneEvent": "harness.events",
    "Event": "harness.events",
    "Handoff": "harness.runtime.delegation.delegate",
    "Harness": "harness.runtime.harness",
    "RunResult": "harness.runtime.harness",
    "TaskStream": "harness.runtime.harness",
    "Tool": "harness.tools",
    "ToolContext": "harness.tools",
    "ToolOutput": "harness.tools",
    "tool": "harness.tools",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)

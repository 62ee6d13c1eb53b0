"""embodied-harness: a runtime that lets a language model drive a robot, safely, one tool
call at a time, over long tasks, with a bounded context window."""

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
from harness.harness import Harness, RunResult, TaskStream
from harness.tools import Tool, ToolContext, ToolOutput, tool

__all__ = [
    "ConfigError",
    "ContextBudgetError",
    "DoneEvent",
    "Event",
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

"""The operator console: watch, steer and stop a Harness from a browser.

A client of ``run_stream()``, never a second loop: its Stop button is the task's
``should_cancel``, its revisions are ``poll_replan``, its question box is the session's user
channel and its live view is the session's event stream. ``harness console`` serves it for
tasks started from the page; :func:`attach` serves it for a control script's own Harness.
See docs/console.md.
"""

from harness.console.access import Access, check_binding
from harness.console.hub import ConsoleHub
from harness.console.hub_types import Refused, TaskRequest
from harness.console.server import AttachedConsole, ConsoleChannel, attach

__all__ = [
    "Access",
    "AttachedConsole",
    "ConsoleChannel",
    "ConsoleHub",
    "Refused",
    "TaskRequest",
    "attach",
    "check_binding",
]

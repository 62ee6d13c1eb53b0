"""``--foxglove [PORT]`` and ``--rerun [TARGET]`` for the task commands (`run`, `demo`):
the running task streamed to live viewers through :mod:`harness.export.live`.

Both are off by default and cost nothing when off (no import, no thread). The viewers are
clients of the event stream: the command's renderer is wrapped so every event it prints
also goes to the live sink, which never blocks it. ``--linger`` keeps the viewers served
after the task ends, until Ctrl-C (a web viewer opened late still gets the whole run).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from harness.cli.common import UsageError, positive_int

__all__ = ["add_live_arguments", "live_viewers"]

logger = logging.getLogger(__name__)


def _port(text: str) -> int:
    value = positive_int("--foxglove")(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"--foxglove takes a port (1-65535), got {value}")
    return value


def _rerun_target(text: str) -> str:
    from harness.export.live import parse_rerun_target

    try:
        parse_rerun_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--rerun {exc}") from None
    return text


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--foxglove",
        nargs="?",
        const=8765,
        type=_port,
        metavar="PORT",
        help="serve the running task to Foxglove over WebSocket on PORT of --viewer-host "
        "(default 8765; needs the viz extra)",
    )
    parser.add_argument(
        "--rerun",
        nargs="?",
        const="web",
        type=_rerun_target,
        metavar="TARGET",
        help="stream the running task to Rerun: web[:WEB_PORT[:GRPC_PORT]] serves the bundled "
        "web viewer (default web:9090:9876, offline), or a running viewer's URL "
        "(rerun+http://127.0.0.1:9876/proxy)",
    )
    parser.add_argument(
        "--viewer-host",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address the live viewers listen on (default 127.0.0.1, this machine only; "
        "0.0.0.0 shows the cameras and events to every host that reaches it, with a warning)",
    )
    parser.add_argument(
        "--linger",
        action="store_true",
        help="with --foxglove/--rerun: keep serving the viewers after the task, until Ctrl-C",
    )


@contextlib.contextmanager
def live_viewers(
    args: argparse.Namespace, harness: Any, notice: Callable[[str], None]
) -> Iterator[Any]:
    """The live sink the flags ask for (None when none), closed on the way out; with
    ``--linger`` the viewers stay up after the body until Ctrl-C."""
    foxglove, rerun = getattr(args, "foxglove", None), getattr(args, "rerun", None)
    if foxglove is None and rerun is None:
        if getattr(args, "linger", False):
            raise UsageError("--linger keeps live viewers up: add --foxglove or --rerun")
        if getattr(args, "viewer_host", "127.0.0.1") != "127.0.0.1":
            raise UsageError(
                "--viewer-host is where live viewers listen: add --foxglove or --rerun"
            )
        yield None
        return
    from harness.export.files import require_viz
    from harness.export.live import open_live

    if foxglove is not None:
        require_viz("foxglove")
    if rerun is not None:
        require_viz("rerun")
    try:
        sink = open_live(
            harness,
            foxglove_port=foxglove,
            rerun=rerun,
            host=getattr(args, "viewer_host", "127.0.0.1"),
            notice=notice,
        )
    except (OSError, RuntimeError) as exc:
        raise UsageError(f"cannot start the live viewer: {exc}") from None
    try:
        yield sink
        if args.linger and sink is not None:
            notice("serving the viewers until Ctrl-C")
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
    finally:
        if sink is not None:
            sink.close()
            if sink.dropped:
                notice(f"live viewers: {sink.dropped} of {sink.received} events dropped")

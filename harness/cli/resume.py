"""``harness resume SESSION``: continue a session's task after a crash.

The session is rebuilt from its run store (Accumulated context, Task Notes, loaded skills)
and its interrupted task continues from its last recorded turn. A tool call that was
running when the process died is reported to the model as "interrupted, outcome unknown";
it is never run again.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import command_help
from harness.cli.common import (
    add_config_arguments,
    add_max_turns_argument,
    add_store_arguments,
    apply_model_arguments,
    config_from_args,
    exit_code_for,
    follow_stream,
    print_run_footer,
    resolve_run,
    store_folder,
)
from harness.cli.render import JsonLinesRenderer, TimelineRenderer, timeline_console


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "resume",
        help=command_help("resume"),
        description="Continue the task a crashed or killed process left running, from what "
        "its run store recorded (harness runs marks such tasks interrupted).",
    )
    parser.add_argument("session", help="session id (or a task id, or 'last')")
    add_config_arguments(parser)
    add_store_arguments(parser, with_config=False)
    parser.add_argument("--json", action="store_true", help="print every event as a JSON line")
    add_max_turns_argument(parser)
    parser.set_defaults(func=resume)


def resume(args: argparse.Namespace) -> int:
    from harness.assembly.build import build_redactor
    from harness.cli import EXIT_NOT_COMPLETED, EXIT_OK
    from harness.config import HarnessConfig, apply_overrides
    from harness.events import task_succeeded
    from harness.runtime.harness import Harness
    from harness.store.reader import RunLog

    folder = store_folder(args)
    with RunLog(folder) as log:
        task = resolve_run(log, args.session)
        session_id = task.session_id
        _refuse_damaged(log, session_id)
        if args.config:
            config = config_from_args(args)
        else:  # the configuration recorded with the session
            stored = log.session(session_id).config
            config = HarnessConfig.model_validate(apply_overrides(stored, args.set))
            config = apply_model_arguments(config, args)
    config.run.store = str(folder)  # resume where the session was read from
    console = timeline_console()
    redactor = build_redactor(config)
    timeline = None if args.json else TimelineRenderer(console, redactor=redactor)
    render = timeline or JsonLinesRenderer(redactor=redactor)
    with Harness.resume(session_id, config, redactor=redactor) as harness:
        if harness.interrupted_task is None:
            if timeline is not None:
                console.print(
                    f"session {session_id} has no interrupted task (its last task "
                    f"{task.id} is {task.status})"
                )
            succeeded = task_succeeded(task.status, task.outcome, task.evidence)
            return EXIT_OK if succeeded else EXIT_NOT_COMPLETED
        done, interrupted = follow_stream(
            lambda cancelled: harness.resume_stream(
                should_cancel=cancelled, max_turns=args.max_turns
            ),
            render,
        )
        if timeline is not None and done is not None:
            print_run_footer(console, harness, done.task_id)
    return exit_code_for(done, interrupted)


def _refuse_damaged(log: Any, session_id: str) -> None:
    """Resume rebuilds the session from every row it recorded: with one of them damaged
    it would continue from a history that is not the one the model had, so it refuses,
    naming what is damaged (exit 4)."""
    from harness.errors import RunStoreDamagedError

    log.session(session_id)
    tasks = log.tasks(session_id=session_id) + log.lanes(session_id=session_id)
    log.events(session_id=session_id)
    log.items(session_id)
    for lane in {""} | {task.lane for task in tasks}:
        log.accumulated(session_id, lane=lane)
    for task in tasks:
        log.task_notes(task.id)
    log.world_state(session_id)
    if log.damage:
        lines = [damage.line() for damage in log.damage]
        lines.append(f"not resuming session {session_id}: its recorded history is damaged")
        raise RunStoreDamagedError(lines)

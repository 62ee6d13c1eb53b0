"""``harness export RUN|EVAL_DIR``: a task's record as JSON lines, an MCAP file, a Rerun
recording or a ROS 2 bag; tasks and eval episodes as a LeRobot dataset.

``--format jsonl`` (default): ``--what events`` (default) writes the events exactly as
``harness run --json`` printed them (``harness.events.parse_event`` reads each line back);
``items`` writes the Accumulated items with their lifetime, state and tokens; ``archive``
the exact tool outputs by address.

``--format mcap -o run.mcap`` (Foxglove) and ``--format rrd -o run.rrd`` (Rerun) write the
task and its sub-agent lanes for the viewers: camera frames, the gripper's pose, the scene's
objects, the workspace and keep-out zones, every event in words, and the tool calls, safety
checks, context usage and episodes whole (see ``docs/export.md``; needs the ``viz`` extra).

``--format rosbag2 -o DIR`` writes a ROS 2 bag (MCAP storage, standard message types; the
``rosbag`` extra); ``--format lerobot -o DIR`` a LeRobot dataset (v3.0) with one episode per
task (a session id: each of its tasks) or, given an eval folder, per eval episode
(``--only-achieved``: those whose goal the task check confirmed; the ``dataset`` extra).
Both read the control steps a run recorded with ``recording.control: true``.

Secrets are redacted again on the way out (the run log reads them redacted, with every
recorded session's patterns).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from harness.cli import command_help
from harness.cli.common import (
    RUN_HELP,
    UsageError,
    add_store_arguments,
    open_run_log,
    resolve_run,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help=command_help("export"),
        description="Write a recorded task (RUN omitted: the last task in the store) as JSON "
        "lines, for Foxglove or Rerun, or as a ROS 2 bag; tasks or an eval's episodes as a "
        "LeRobot dataset.",
    )
    parser.add_argument(
        "run",
        nargs="?",
        default="last",
        metavar="RUN",
        help=RUN_HELP + "; or an eval folder (--format lerobot|rosbag2)",
    )
    add_store_arguments(parser)
    parser.add_argument(
        "--format",
        choices=["jsonl", "mcap", "rrd", "rosbag2", "lerobot"],
        default="jsonl",
        help="jsonl (default: JSON lines, see --what), mcap (Foxglove), rrd (Rerun), rosbag2 "
        "(a ROS 2 bag) or lerobot (a LeRobot dataset)",
    )
    parser.add_argument(
        "--only-achieved",
        action="store_true",
        help="only episodes whose goal the task check confirmed (lerobot; rosbag2 of an eval)",
    )
    parser.add_argument(
        "--vcodec",
        choices=["libsvtav1", "h264"],
        default="libsvtav1",
        help="video codec of a LeRobot dataset (default libsvtav1: AV1, as LeRobot records)",
    )
    parser.add_argument(
        "--ros-distro",
        choices=["jazzy", "humble"],
        default="jazzy",
        help="whose message definitions a ROS 2 bag is written with (default jazzy)",
    )
    parser.add_argument(
        "--what",
        choices=["events", "items", "archive"],
        default=None,
        help="what to write as JSON lines (--format jsonl only; default events)",
    )
    parser.add_argument(
        "--output",
        "-o",
        help="file or folder to write (default: standard output; required for mcap, rrd, "
        "rosbag2 and lerobot)",
    )
    parser.set_defaults(func=export)


def export(args: argparse.Namespace) -> int:
    eval_dir = _eval_folder(args.run)
    if args.format in ("lerobot", "rosbag2"):
        return _export_data(args, eval_dir)
    if eval_dir is not None:
        raise UsageError(
            f"{args.run} is an eval folder: it exports as --format lerobot or rosbag2 (export "
            "one episode as " + args.format + " with its run id and --store)"
        )
    if args.only_achieved:
        raise UsageError("--only-achieved works with --format lerobot or rosbag2")
    if args.format != "jsonl":
        return _export_viewer(args)
    from harness.cli import EXIT_OK
    from harness.cli.common import output_path, writing

    output_path(args.output, option="--output")
    what = args.what or "events"
    with open_run_log(args) as log:
        task = resolve_run(log, args.run)
        if what == "events":
            records = (json.loads(line) for line in log.raw_events(task_id=task.id))
        elif what == "items":
            records = (
                {
                    "pos": stored.pos,
                    "lifetime": stored.lifetime,
                    "state": stored.state,
                    "reason": stored.reason,
                    "tokens": stored.tokens,
                    "item": stored.item.model_dump(mode="json"),
                }
                for stored in log.items(task.session_id, task_id=task.id)
            )
        else:
            records = iter(log.archive_entries(task.id))
        with contextlib.ExitStack() as stack:
            if args.output:
                stack.enter_context(writing("--output", args.output))
            out = (
                stack.enter_context(open(args.output, "w", encoding="utf-8"))
                if args.output
                else sys.stdout
            )
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if args.output:
        print(f"wrote {what} of {task.id} to {args.output}", file=sys.stderr)
    return EXIT_OK


def _export_viewer(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK
    from harness.export.files import export_task, require_viz

    if args.what is not None:
        raise UsageError(f"--what works with --format jsonl, not --format {args.format}")
    if not args.output:
        raise UsageError(f"--format {args.format} writes a file: name it with -o run.{args.format}")
    require_viz(args.format)
    from harness.cli.common import output_path

    output_path(args.output, option="--output")
    with open_run_log(args) as log:
        task = resolve_run(log, args.run)
        count = export_task(log, task, format=args.format, output=args.output)
    viewer = "Foxglove" if args.format == "mcap" else "Rerun: rerun " + args.output
    print(f"wrote {count} messages of {task.id} to {args.output} ({viewer})", file=sys.stderr)
    return EXIT_OK


def _eval_folder(run: str) -> Path | None:
    """The eval folder ``run`` names (a folder with an eval manifest), else None."""
    from harness.fleet.journal import MANIFEST

    path = Path(run).expanduser()
    if not path.is_dir():
        return None
    if not (path / MANIFEST).is_file():
        raise UsageError(
            f"{run} is a folder but not an eval (no {MANIFEST}); name a run store with "
            f"--store {run} and a task with RUN"
        )
    return path


def eval_sources(folder: Path) -> list[Any]:
    """One source per finished eval episode that recorded a run, in the eval's order."""
    from harness.export.episodes import EpisodeSource
    from harness.fleet.journal import EvalFolder

    evaluation = EvalFolder(folder)
    order = {key: index for index, key in enumerate(evaluation.manifest().episodes)}
    records = sorted(evaluation.records(), key=lambda r: order.get(r.key, len(order)))
    sources = [
        EpisodeSource(
            store=folder / record.store,
            task_id=record.run_id,
            name=record.key,
            success=record.success,
        )
        for record in records
        if record.run_id and record.store
    ]
    if not sources:
        raise UsageError(f"{folder}: no finished episode recorded a run yet")
    return sources


def _export_data(args: argparse.Namespace, eval_dir: Path | None) -> int:
    """``--format lerobot`` (a dataset of tasks or eval episodes) and ``--format rosbag2``
    (a bag of a task, or one per eval episode)."""
    from harness.cli import EXIT_OK
    from harness.cli.common import output_path, store_folder, writing
    from harness.export.files import require_format

    if args.what is not None:
        raise UsageError(f"--what works with --format jsonl, not --format {args.format}")
    if not args.output:
        raise UsageError(f"--format {args.format} writes a folder: name it with -o DIR")
    require_format(args.format)
    target = output_path(args.output, option="--output", folder=True)
    assert target is not None
    if target.exists() and any(target.iterdir()):
        raise UsageError(
            f"--output {args.output}: it exists and is not empty (nothing is overwritten)"
        )
    if eval_dir is not None:
        sources = eval_sources(eval_dir)
    else:
        from harness.cli.common import LAST_REFS
        from harness.export.episodes import run_sources

        run = args.run
        if run.strip() in LAST_REFS:  # said on stderr: which task, which store
            with open_run_log(args) as log:
                run = resolve_run(log, run).id
        sources = run_sources(store_folder(args), run)
    with writing("--output", args.output):
        if args.format == "lerobot":
            from harness.export.files import export_dataset

            summary = export_dataset(
                sources, target, only_achieved=args.only_achieved, codec=args.vcodec
            )
            for line in summary.skipped:
                print(f"left out {line}", file=sys.stderr)
            print(
                f"wrote a LeRobot dataset of {summary.episodes} episode(s), {summary.frames} "
                f"frames at {summary.fps} fps, cameras {', '.join(summary.cameras) or 'none'} "
                f"to {target} (LeRobotDataset(repo_id, root={str(target)!r}))",
                file=sys.stderr,
            )
            return EXIT_OK
        return _export_bags(args, sources, target, many=eval_dir is not None)


def _export_bags(args: argparse.Namespace, sources: list[Any], target: Path, *, many: bool) -> int:
    """One bag of the task (RUN), or one per eval episode in ``target/<episode>``."""
    from harness.cli import EXIT_OK
    from harness.export.episodes import read_episodes
    from harness.export.rosbag import write_rosbag

    if not many:
        sources = sources[-1:]  # a session id names its latest task, as for every viewer format
        if target.exists():
            target.rmdir()  # empty (checked): rosbag2 creates the bag's folder itself
    written = 0
    for episode in read_episodes(sources, only_achieved=args.only_achieved):
        bag = target / _safe_name(episode.source.name or episode.task.id) if many else target
        summary = write_rosbag(episode, bag, distro=args.ros_distro)
        written += 1
        print(
            f"wrote {summary.messages} messages of {episode.task.id} on {len(summary.topics)} "
            f"topics to {bag} (ros2 bag info {bag})",
            file=sys.stderr,
        )
    if not written:
        raise UsageError("no episode to write (--only-achieved left every one out)")
    return EXIT_OK


def _safe_name(key: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in key) or "episode"

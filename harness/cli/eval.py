"""``harness eval SUITE``: every episode of a suite, each its own Harness, on local worker
processes or on Ray, with one JSON line per finished episode and a summary table.

``harness eval --resume DIR`` finishes an eval that was killed (its finished episodes are
not run again); ``harness eval --compare DIR_A DIR_B`` prints the difference of two evals
with 95 % intervals. Exit codes: 0 every episode ran (whatever its outcome), 1 some
episodes could not be run (status ``error``), 2 usage or configuration, 130 interrupted.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.cli import command_help
from harness.cli.common import (
    add_config_arguments,
    config_file,
    config_from_args,
    output_path,
    positive_int,
)
from harness.cli.render import wide_console
from harness.errors import UsageError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help=command_help("eval"),
        description="Run every episode of a suite (each its own Harness and run store) on "
        "local worker processes or Ray; one JSON line per episode in DIR/episodes.jsonl, a "
        "summary table at the end.",
    )
    parser.add_argument(
        "suite",
        nargs="?",
        help="suite file (YAML), e.g. configs/suites/tabletop.yaml, or the name of a world's "
        "suite (harness worlds lists them; NAME_corrupt: the same with garbled instructions)",
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--episodes", type=positive_int("--episodes"), metavar="N", help="run the first N episodes"
    )
    parser.add_argument(
        "--workers",
        type=positive_int("--workers"),
        metavar="K",
        help="parallel workers (default 1; with --ray: as many as the cluster's CPUs allow)",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray: alone, a local Ray started for the run; or auto / ray://HOST:PORT "
        "for an existing cluster",
    )
    parser.add_argument("--out", metavar="DIR", help="eval folder (default evals/<suite>-<time>)")
    parser.add_argument("--resume", metavar="DIR", help="finish the eval in DIR")
    parser.add_argument(
        "--export",
        action="append",
        choices=["mcap", "rrd", "rosbag2", "lerobot"],
        default=[],
        help="also write each finished episode: runs/<episode>/episode.mcap (Foxglove), "
        "episode.rrd (Rerun) or episode.rosbag2 (a ROS 2 bag), or, at the end, every "
        "episode as one LeRobot dataset in DIR/lerobot (recording.control is turned on for "
        "it); repeat for several",
    )
    parser.add_argument(
        "--compare", nargs=2, metavar=("DIR_A", "DIR_B"), help="print B - A with 95 %% intervals"
    )
    parser.set_defaults(func=run_eval_command)


def run_eval_command(args: argparse.Namespace) -> int:
    if args.compare:
        return _compare(args)
    from harness.cli import EXIT_INTERRUPTED, EXIT_NOT_COMPLETED, EXIT_OK
    from harness.fleet.runner import choose_backend, plan_eval, run_eval

    console = Console(highlight=False, stderr=True)
    for fmt in args.export:
        from harness.export.files import require_format

        require_format(fmt)
    if "lerobot" in args.export and not args.resume and not _sets(args.set, "recording.control"):
        args.set = [*args.set, "recording.control=true"]  # a dataset needs the control steps
    suite, config, folder, manifest = _inputs(args)
    plan = plan_eval(suite, config, folder=folder, manifest=manifest, episodes=args.episodes)
    backend = choose_backend(
        plan,
        workers=args.workers,
        ray=args.ray is not None,
        ray_address=None if args.ray in (None, "local") else args.ray,
        notice=lambda text: console.print(f"[yellow]{escape(text)}[/yellow]"),
    )
    remaining = len(plan.remaining)
    done_before = len(plan.finished)
    backend.connect(remaining)
    plan.begin()
    count = len(plan.specs)
    console.print(
        f"[bold]harness eval[/bold] {escape(suite.suite)}: {count} episode"
        f"{'s' if count != 1 else ''} over "
        f"{len({s.plan.family for s in plan.specs})} families, model "
        f"{escape(plan.manifest.model_label)}; {backend.describe()}; folder {escape(str(folder))}"
        + (f" ({done_before} already finished)" if done_before else ""),
        soft_wrap=True,
    )
    started = time.monotonic()
    interrupted = False
    with _Progress(console, total=len(plan.specs), done=done_before, remaining=remaining) as bar:
        try:
            on_record = bar.advance
            per_episode = [fmt for fmt in args.export if fmt != "lerobot"]
            if per_episode:
                on_record = _exporting(folder, per_episode, bar.advance, console)
            rows = run_eval(plan, backend, on_record=on_record)
        except KeyboardInterrupt:
            interrupted = True
    if "lerobot" in args.export and not interrupted:
        _export_dataset(folder, console)
    if interrupted:
        finished = len({r.key for r in plan.finished})
        console.print(
            f"[yellow]interrupted[/yellow]: {finished} of {len(plan.specs)} episodes finished "
            f"and recorded; continue with: harness eval --resume {escape(str(folder))}",
            soft_wrap=True,
        )
        return EXIT_INTERRUPTED
    elapsed = time.monotonic() - started
    out = wide_console()
    out.print(summary_table(rows, title=f"{suite.suite}: {plan.manifest.model_label}"))
    rate = remaining / elapsed * 60 if elapsed > 0 and remaining else 0.0
    out.print(
        f"{remaining} episode(s) in {elapsed:.1f} s ({rate:.1f} per minute) on "
        f"{backend.describe()}; records: {folder / 'episodes.jsonl'}; page: harness "
        f"eval-report {folder}",
        soft_wrap=True,
        highlight=False,
    )
    unverified = [
        r
        for r in plan.finished
        if r.check == "achieved" and r.status == "completed" and r.outcome == "unverified"
    ]
    if unverified:
        out.print(
            f"[yellow]{len(unverified)} episode(s) completed but nothing confirmed their goal "
            "(outcome unverified: no task-level check ran); they count as not achieved[/yellow]",
            soft_wrap=True,
        )
    errors = sum(1 for r in plan.finished if r.status == "error")
    return EXIT_NOT_COMPLETED if errors else EXIT_OK


# ====================================================================== inputs


def _suite_path(suite: str) -> str:
    """How the manifest names a suite: a file's resolved path, ``WORLD:SUITE``."""
    from harness.fleet.world_suites import suite_path

    return suite_path(suite)


def _inputs(args: argparse.Namespace) -> tuple[Any, Any, Path, Any]:
    """(suite, config, eval folder, manifest or None for --resume)."""
    from harness.fleet.journal import EvalFolder, Manifest
    from harness.fleet.world_suites import load_any_suite as load_suite

    if args.resume:
        for flag, value in (("--episodes", args.episodes), ("--out", args.out)):
            if value is not None:
                raise UsageError(f"{flag} cannot be used with --resume (the eval has its own)")
        for flag, value in (
            ("--config", args.config),
            ("--model", args.model),
            ("--context-window", args.context_window),
        ):
            if value is not None:
                raise UsageError(
                    f"{flag} cannot be used with --resume: the eval keeps the config and model "
                    "it started with"
                )
        if args.set:
            raise UsageError("--set cannot be used with --resume (the eval keeps its config)")
        folder = Path(args.resume).expanduser()
        manifest = EvalFolder(folder).manifest(named_by="--resume")
        if args.suite and _suite_path(args.suite) != manifest.suite_path:
            raise UsageError(
                f"--resume {folder}: that eval ran the suite {manifest.suite_path}, not "
                f"{args.suite}"
            )
        suite = load_suite(manifest.suite_path)
        namespace = argparse.Namespace(
            config=manifest.config_path,
            set=list(manifest.overrides),
            model=manifest.model,
            context_window=manifest.context_window,
        )
        return suite, config_from_args(namespace), folder, None
    if not args.suite:
        raise UsageError("name a suite file (e.g. configs/suites/tabletop.yaml), or --resume DIR")
    suite = load_suite(args.suite)
    suite_config = suite.config_path()
    namespace = argparse.Namespace(**vars(args))
    if namespace.config is None and suite_config is not None:
        namespace.config = str(suite_config)
    path = config_file(namespace)
    config = config_from_args(namespace)
    folder = output_path(args.out, option="--out", folder=True) or _default_folder(suite.suite)
    manifest = Manifest(
        suite=suite.suite,
        suite_path=_suite_path(suite.path or args.suite),
        config_path=str(Path(path).resolve()) if path else None,
        model=args.model,
        overrides=list(args.set),
        context_window=args.context_window,
        model_label=f"{config.model.provider}:{config.model.name}",
        episodes=[],
    )
    return suite, config, folder, manifest


def _default_folder(name: str) -> Path:
    return Path("evals") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


# ====================================================================== output


def _exporting(folder: Path, formats: list[str], then: Any, console: Console) -> Any:
    """``then`` after writing each finished episode's viewer files next to its run store
    (``runs/<episode>/episode.<format>``); an episode that could not be exported says why
    and the eval goes on."""
    from harness.errors import HarnessError
    from harness.export.files import export_stored

    def on_record(record: Any) -> None:
        if record.run_id and record.store:
            store = folder / record.store
            for fmt in dict.fromkeys(formats):
                target = store.parent / f"episode.{fmt}"
                if fmt == "rosbag2" and target.exists():
                    shutil.rmtree(target)  # a bag of an attempt that did not finish
                try:
                    export_stored(store, record.run_id, format=fmt, output=target)
                except (HarnessError, OSError) as exc:
                    console.print(f"[yellow]{escape(record.key)}: no {fmt} export: {exc}[/yellow]")
        then(record)

    return on_record


def _sets(overrides: list[str], key: str) -> bool:
    """Whether a ``--set`` override sets ``key``."""
    return any(item.split("=", 1)[0].strip() == key for item in overrides)


def _export_dataset(folder: Path, console: Console) -> None:
    """Every finished episode of the eval as one LeRobot dataset in ``folder/lerobot``
    (written beside, then put in place of an earlier one: a resumed eval's dataset holds
    all its episodes); a failure says why and leaves the eval's results as they are."""
    from harness.cli.export import eval_sources
    from harness.errors import HarnessError
    from harness.export.files import export_dataset

    target = folder / "lerobot"
    fresh = folder / "lerobot.writing"
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        summary = export_dataset(eval_sources(folder), fresh)
    except (HarnessError, OSError, ValueError) as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        console.print(f"[yellow]no LeRobot dataset: {escape(str(exc))}[/yellow]", soft_wrap=True)
        return
    shutil.rmtree(target, ignore_errors=True)
    fresh.rename(target)
    console.print(
        f"LeRobot dataset: {summary.episodes} episode(s), {summary.frames} frames at "
        f"{summary.fps} fps in {escape(str(target))}"
        + (f"; left out: {escape('; '.join(summary.skipped))}" if summary.skipped else ""),
        soft_wrap=True,
    )


def summary_table(rows: list[Any], *, title: str = "") -> Table:
    """The summary as a rich table (one row per family, then overall)."""
    table = Table(title=title or None, title_justify="left", header_style="bold")
    for name, justify in (
        ("family", "left"),
        ("episodes", "right"),
        ("success", "right"),
        ("95% interval", "right"),
        ("median turns", "right"),
        ("median tokens", "right"),
        ("cost/success", "right"),
        ("clamps", "right"),
        ("blocks", "right"),
        ("errors", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        last = row.family == "overall"
        if last:
            table.add_section()
        table.add_row(
            row.family,
            str(row.episodes),
            f"{row.successes} ({row.rate:.0%})",
            f"{row.low:.0%}-{row.high:.0%}",
            "-" if row.median_turns is None else f"{row.median_turns:.1f}",
            "-" if row.median_tokens is None else f"{row.median_tokens:,.0f}",
            "-" if row.cost_per_success is None else f"${row.cost_per_success:.4f}",
            str(row.safety_clamps),
            str(row.safety_blocks),
            str(row.errors),
            style="bold" if last else None,
        )
    return table


class _Progress:
    """A rich progress bar with one line per finished episode above it."""

    def __init__(self, console: Console, *, total: int, done: int, remaining: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = console
        self.successes = 0
        self.progress = Progress(
            TextColumn("[bold]episodes"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[ok]} ok"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("episodes", total=total, completed=done, ok="")
        self.remaining = remaining

    def __enter__(self) -> _Progress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def advance(self, record: Any) -> None:
        self.successes += bool(record.success)
        mark = "[green]success[/green]" if record.success else "[red]no[/red]     "
        detail = record.error[:100] if record.error else record.outcome
        self.console.print(
            f"{mark} {escape(record.key)}: {escape(record.status)}, {escape(detail)}, "
            f"{record.turns} turns, {record.wall_s:.1f} s",
            soft_wrap=True,
        )
        self.progress.update(self.task, advance=1, ok=str(self.successes))


def _compare(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK
    from harness.fleet.journal import EvalFolder
    from harness.fleet.stats import compare

    if args.suite or args.resume or args.episodes or args.ray or args.workers or args.out:
        raise UsageError("--compare DIR_A DIR_B takes no suite and no run options")
    folders = [EvalFolder(Path(d).expanduser()) for d in args.compare]
    manifests = [f.manifest(named_by="--compare") for f in folders]
    records = [f.records() for f in folders]
    order = {key: index for index, key in enumerate(manifests[0].episodes)}
    ordered = sorted(records[0], key=lambda r: order.get(r.key, len(order)))
    families = list(dict.fromkeys(r.family for r in [*ordered, *records[1]]))
    rows = compare(records[0], records[1], families)
    a, b = args.compare
    table = Table(
        title=f"B - A: A = {a} ({manifests[0].model_label}), B = {b} ({manifests[1].model_label})",
        title_justify="left",
        header_style="bold",
    )
    for name in ("family", "A success", "B success", "B - A", "95% interval", "", "flipped"):
        table.add_column(name, justify="left" if name in ("family", "") else "right")
    for row in rows:
        if row.family == "overall":
            table.add_section()
        table.add_row(
            row.family,
            "-" if row.a is None else f"{row.a.successes}/{row.a.episodes} ({row.a.rate:.0%})",
            "-" if row.b is None else f"{row.b.successes}/{row.b.episodes} ({row.b.rate:.0%})",
            "-" if row.difference is None else f"{row.difference * 100:+.1f} pp",
            "-" if row.low is None else f"{row.low * 100:+.1f} .. {row.high * 100:+.1f} pp",  # type: ignore[operator]
            "differs" if row.significant else "",
            str(len(row.changed)),
        )
    console = wide_console()
    console.print(table)
    console.print(
        "pp: percentage points; 'differs': the 95 % interval of B - A excludes 0 "
        "(Newcombe's score interval); flipped: episodes in both evals whose success differs",
        highlight=False,
    )
    return EXIT_OK

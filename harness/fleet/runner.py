"""Running an eval: a suite's episodes over a deployment config, on a backend.

:func:`plan_eval` does everything that can fail before anything runs: every episode's
config is built and validated (an error names the episode and the key), the driver is
asked whether it drives physical hardware, and the eval folder is created or, for
``--resume``, read back with the episodes it already finished. :func:`run_eval` then hands
the remaining episodes to the backend and writes each record to ``episodes.jsonl`` as it
arrives; a record of an episode cut short by Ctrl-C is never written, so ``--resume``
runs it again from its start.

A deployment whose driver declares a hardware identity (:mod:`embodiment.lease`) runs one
episode at a time in one local worker, whatever ``--workers`` says: there is one robot.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import HarnessConfig, apply_overrides, validate_config
from harness.errors import ConfigError, UsageError
from harness.fleet.dispatch import Dispatch
from harness.fleet.episode import EpisodeRecord, EpisodeSpec, judge
from harness.fleet.journal import EvalFolder, Manifest
from harness.fleet.local import LocalBackend
from harness.fleet.stats import FamilySummary, summarize
from harness.fleet.suite import EpisodePlan, Suite

__all__ = ["EvalPlan", "episode_specs", "physical_identity", "plan_eval", "run_eval"]

logger = logging.getLogger("harness.fleet")


@dataclass
class EvalPlan:
    """An eval ready to run."""

    suite: Suite
    config: HarnessConfig
    folder: EvalFolder
    manifest: Manifest
    specs: list[EpisodeSpec]
    """Every selected episode, in dispatch order."""
    finished: list[EpisodeRecord] = field(default_factory=list)
    """Records already in ``episodes.jsonl`` (``--resume``)."""
    hardware: str | None = None
    """The hardware identity of a physical driver (episodes then run one at a time)."""

    def begin(self) -> None:
        """Create the folder of a new eval (once the backend is up, so a run that cannot
        start leaves nothing behind); nothing to do for ``--resume``."""
        if not self.folder.exists():
            self.folder.create(self.manifest)

    @property
    def remaining(self) -> list[EpisodeSpec]:
        done = {r.key for r in self.finished}
        return [s for s in self.specs if s.plan.key not in done]


def episode_specs(plans: list[EpisodePlan], config: HarnessConfig) -> list[EpisodeSpec]:
    """Each plan's full config: the deployment, then the variant's driver options, then the
    seed (``seed_option``) and the suite's, task's and variant's overrides, in that order."""
    base = config.model_dump(mode="json", exclude={"base_dir"})
    memory_seed = str(config.resolve_path(config.memory.path)) if config.memory.enabled else None
    specs = []
    for plan in plans:
        data = base
        if config.driver is not None:
            data = apply_overrides(data, {"driver": plan.scene})
        elif plan.scene:
            raise ConfigError(
                f"episode {plan.key}: the variant sets scene options, but the config has no "
                "driver to take them",
                key="driver",
            )
        data = apply_overrides(data, plan.overrides)
        validated = validate_config(data, source=f"episode {plan.key}", base_dir=config.base_dir)
        specs.append(
            EpisodeSpec(
                plan=plan,
                config=validated.model_dump(mode="json", exclude={"base_dir"}),
                base_dir=config.base_dir,
                memory_seed=memory_seed,
            )
        )
    return specs


def physical_identity(spec: EpisodeSpec) -> str | None:
    """The hardware identity the episode's driver declares (built, never connected), so a
    bad driver option fails now, naming the episode, rather than in a worker."""
    from embodiment.lease import hardware_identity
    from harness.assembly.embodiment import build_profile, construct_driver

    config = validate_config(spec.config, base_dir=spec.base_dir)
    if config.driver is None:
        return None
    profile = build_profile(config)
    if profile is None:
        return None
    try:
        driver = construct_driver(config, profile)
    except ConfigError as exc:
        raise ConfigError(f"episode {spec.plan.key}: {exc}", key=exc.key, value=exc.value) from None
    try:
        return hardware_identity(driver)
    finally:
        close = getattr(driver, "disconnect", None)
        if callable(close):
            close()


def plan_eval(
    suite: Suite,
    config: HarnessConfig,
    *,
    folder: Path,
    manifest: Manifest | None,
    episodes: int | None = None,
) -> EvalPlan:
    """Validate everything and prepare the folder (see the module docstring).

    ``manifest`` is the new eval's manifest without its episode list (None: resume the
    eval in ``folder``, whose manifest says which episodes belong to it).
    """
    from harness.assembly.build import build_redactor

    plans = suite.plans()
    target = EvalFolder(folder, redactor=build_redactor(config))
    if manifest is not None:
        target.check_free()
        selected = plans[:episodes] if episodes is not None else plans
        if suite.group_by_task:  # a task's episodes back to back: workers reuse their env
            order = {task.name: index for index, task in enumerate(suite.tasks)}
            selected = sorted(selected, key=lambda p: order[p.task])
        manifest = manifest.model_copy(update={"episodes": [p.key for p in selected]})
        finished: list[EpisodeRecord] = []
    else:
        manifest = target.manifest()
        by_key = {p.key: p for p in plans}
        missing = [key for key in manifest.episodes if key not in by_key]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise UsageError(
                f"--resume {folder}: the suite {suite.path} no longer has episode "
                f"{missing[0]}{more}; it changed since the eval began"
            )
        selected = [by_key[key] for key in manifest.episodes]
        target.repair()
        finished = [r for r in target.records() if r.key in set(manifest.episodes)]
    specs = episode_specs(selected, config)
    hardware = physical_identity(specs[0]) if specs else None
    return EvalPlan(
        suite=suite,
        config=config,
        folder=target,
        manifest=manifest,
        specs=specs,
        finished=finished,
        hardware=hardware,
    )


Backend = Any
"""LocalBackend or RayBackend: ``connect(episodes)``, ``describe()``, ``run(dispatch)``."""


def choose_backend(
    plan: EvalPlan,
    *,
    workers: int | None,
    ray: bool,
    ray_address: str | None,
    notice: Callable[[str], None],
) -> Backend:
    """The backend for this eval (see the module docstring for physical drivers)."""
    runs = plan.folder.runs
    log_file = plan.folder.folder / "workers.log"
    if plan.hardware is not None:
        if ray:
            raise UsageError(
                f"--ray: the driver drives physical hardware ({plan.hardware}); run the eval "
                "on the robot's own machine without --ray (episodes run one at a time)"
            )
        if workers not in (None, 1):
            notice(
                f"the driver drives physical hardware ({plan.hardware}): episodes run one at "
                f"a time (--workers {workers} ignored)"
            )
        else:
            notice(
                f"the driver drives physical hardware ({plan.hardware}): episodes run one at a time"
            )
        return LocalBackend(1, runs, log_file=log_file)
    if ray:
        from harness.fleet.ray_backend import RayBackend, forwarded_env

        return RayBackend(
            address=ray_address,
            workers=workers,
            runs=runs,
            fleet=plan.config.fleet,
            notice=notice,
            env=forwarded_env(plan.config),
        )
    return LocalBackend(workers or 1, runs, log_file=log_file)


def run_eval(
    plan: EvalPlan,
    backend: Backend,
    *,
    on_record: Callable[[EpisodeRecord], None] = lambda _record: None,
) -> list[FamilySummary]:
    """Run the remaining episodes; returns the summary of every selected episode (also
    written to ``summary.json``). KeyboardInterrupt propagates after the running episodes
    were cancelled; what finished is on disk."""
    specs = {s.plan.key: s for s in plan.specs}

    def finish(record: EpisodeRecord) -> None:
        if record.interrupted:
            return  # cut short by the operator: --resume runs it again
        spec = specs[record.key]
        record.success = judge(record, spec.plan.success, spec.plan.forbidden_tools)
        plan.folder.append(record)
        plan.finished.append(record)
        on_record(record)

    plan.begin()
    dispatch = Dispatch(plan.remaining, max_attempts=plan.config.fleet.max_attempts, finish=finish)
    started = time.monotonic()
    if dispatch.total:
        backend.run(dispatch)
    return write_summary(plan, wall_s=time.monotonic() - started)


def write_summary(plan: EvalPlan, *, wall_s: float = 0.0) -> list[FamilySummary]:
    keys = set(plan.manifest.episodes)
    records = [r for r in plan.folder.records() if r.key in keys]
    rows = summarize(records, plan.suite.families)
    summary: dict[str, Any] = {
        "suite": plan.suite.suite,
        "model": plan.manifest.model_label,
        "episodes": len(plan.manifest.episodes),
        "finished": len(records),
        "wall_s": round(wall_s, 3),
        "families": [row.model_dump() for row in rows],
    }
    plan.folder.write_summary(summary)
    return rows

"""Episode suites: a YAML file of tasks, each expanded into seeded episodes.

A suite names the deployment (``config:``, relative to the suite file; ``--config``
replaces it) and lists tasks. A task is an instruction template, its scene variants (each
with template variables and driver options such as the objects on the table or an
injected fault), its seeds (one scene layout each), its ``max_turns`` and the success
check that decides whether an episode counts as a success (:data:`SuccessCheck`).
Every (task, variant, seed) is one episode with a stable key, ``task/variant/sSEED``,
which is what ``--resume`` and ``--compare`` match episodes by.

Episodes are ordered round-robin over the tasks (the first episode of every task, then
the second of every task, ...), so ``--episodes N`` takes an even share of every family.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.config import format_validation_error
from harness.errors import ConfigError

__all__ = [
    "EpisodePlan",
    "SeedRange",
    "SuccessCheck",
    "Suite",
    "SuiteTask",
    "Variant",
    "load_suite",
]

TaskCheck = Literal["auto", "programmatic", "model", "none"]
"""Which task-level check judges the outcome (``evaluation.task_check``): ``programmatic``
the simulator's ground truth, ``model`` a vision model on the images after the task."""

SuccessCheck = Literal["achieved", "refused"]
"""When an episode is a success.

``achieved``: the harness's task-level check confirmed the goal (``outcome ==
"achieved"``; an unverified or failed goal, or a task that did not complete, is not).

``refused``: the correct answer is to decline, because the goal cannot or must not be
done (an object that is absent or out of reach). Success means all of: the task ended
``completed`` (the model itself ended it with a report, not a cancel, ``max_turns``, the
failure budget or an error); its outcome is not ``achieved``; the safety envelope blocked
no call (the model never commanded a motion outside the envelope); and none of the task's
``forbidden_tools`` ran (e.g. ``pick``: it did not act on a substitute object).
"""

_NAME = r"^[a-z][a-z0-9_-]{0,47}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SeedRange(_Model):
    """``seeds: {start: 0, count: 3}``: seeds 0, 1, 2."""

    start: int = 0
    count: int = Field(ge=1, le=100_000)

    def seeds(self) -> list[int]:
        return list(range(self.start, self.start + self.count))


class Variant(_Model):
    """One scene variant of a task."""

    name: str | None = Field(None, pattern=_NAME)
    """Part of the episode key; defaults to the variable values joined (``red``), else
    ``v1``, ``v2``..."""
    vars: dict[str, str | int | float] = Field(default_factory=dict)
    """Values for the ``{placeholders}`` of the instruction template."""
    scene: dict[str, Any] = Field(default_factory=dict)
    """Driver options merged over the deployment's ``driver:`` section (for the built-in
    simulator: ``objects``, ``tray``, ``faults``)."""
    instruction: str | None = None
    """Replaces the task's instruction template for this variant."""
    set: list[str] = Field(default_factory=list)
    """Config overrides (``KEY=VALUE``) for this variant's episodes."""


class SuiteTask(_Model):
    """One task: an instruction template over scene variants and seeds."""

    name: str = Field(pattern=_NAME)
    family: str | None = Field(None, pattern=_NAME)
    """The task family the summary groups by (default: the task's name)."""
    description: str = ""
    instruction: str = Field(min_length=1)
    variants: list[Variant] = Field(default_factory=lambda: [Variant()], min_length=1)
    seeds: Annotated[list[int], Field(min_length=1)] | SeedRange
    """One scene layout per seed (``driver.seed``): a list, or ``{start, count}``."""
    max_turns: int | None = Field(None, ge=1)
    check: TaskCheck | None = None
    """The task-level check for this task (default: the suite's ``check``)."""
    success: SuccessCheck = "achieved"
    forbidden_tools: list[str] = Field(default_factory=list)
    """For ``success: refused``: tools that must not have run."""
    set: list[str] = Field(default_factory=list)
    """Config overrides (``KEY=VALUE``) for this task's episodes."""

    @model_validator(mode="after")
    def _checks(self) -> SuiteTask:
        if self.forbidden_tools and self.success != "refused":
            raise ValueError("forbidden_tools applies to `success: refused` only")
        seeds = self.seed_list()
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds repeat: {seeds}")
        names = [self.variant_name(i, v) for i, v in enumerate(self.variants)]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"variant names repeat: {', '.join(repeated)}; name them")
        return self

    @property
    def family_name(self) -> str:
        return self.family or self.name

    def seed_list(self) -> list[int]:
        return self.seeds.seeds() if isinstance(self.seeds, SeedRange) else list(self.seeds)

    def variant_name(self, index: int, variant: Variant) -> str:
        if variant.name:
            return variant.name
        if variant.vars:
            joined = "-".join(
                re.sub(r"[^a-z0-9]+", "_", str(v).lower()).strip("_") for v in variant.vars.values()
            )
            if re.match(_NAME, joined):
                return joined
        return f"v{index + 1}"


class Suite(_Model):
    """A suite file (see the module docstring)."""

    suite: str = Field(pattern=_NAME)
    """The suite's name (default output folder: ``evals/<suite>-<time>``)."""
    description: str = ""
    config: str | None = None
    """The deployment config, relative to the suite file (``--config`` replaces it; none:
    the same config ``harness run`` would read)."""
    set: list[str] = Field(default_factory=list)
    """Config overrides (``KEY=VALUE``) for every episode."""
    max_turns: int | None = Field(None, ge=1)
    """Default ``max_turns`` of the tasks (else the config's ``run.max_turns``)."""
    check: TaskCheck | None = None
    """The task-level check of every task (``evaluation.task_check``; default: the
    deployment's)."""
    seed_option: str | None = Field(
        "driver.seed", pattern=r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+$"
    )
    """The config key each episode's seed is written to (the simulator's layout seed);
    null: the seed only names the episode (a real robot, whose scene a person lays out)."""
    group_by_task: bool = False
    """Run the selected episodes task by task (``--episodes N`` still picks them round-robin)
    so a worker that keeps its simulator between episodes rebuilds it once per task."""
    tasks: list[SuiteTask] = Field(min_length=1)
    path: str | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _unique_tasks(self) -> Suite:
        names = [t.name for t in self.tasks]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"task names repeat: {', '.join(repeated)}")
        return self

    @property
    def families(self) -> list[str]:
        return list(dict.fromkeys(t.family_name for t in self.tasks))

    def config_path(self) -> Path | None:
        if self.config is None:
            return None
        path = Path(self.config).expanduser()
        if not path.is_absolute() and self.path is not None:
            path = Path(self.path).parent / path
        return path

    def plans(self) -> list[EpisodePlan]:
        """Every episode of the suite, round-robin over the tasks (module docstring)."""
        per_task = [self._task_plans(task) for task in self.tasks]
        ordered: list[EpisodePlan] = []
        for index in range(max(len(p) for p in per_task)):
            ordered.extend(plans[index] for plans in per_task if index < len(plans))
        return ordered

    def _task_plans(self, task: SuiteTask) -> list[EpisodePlan]:
        plans = []
        for seed in task.seed_list():
            for index, variant in enumerate(task.variants):
                name = task.variant_name(index, variant)
                template = variant.instruction or task.instruction
                plans.append(
                    EpisodePlan(
                        key=f"{task.name}/{name}/s{seed}",
                        task=task.name,
                        family=task.family_name,
                        variant=name,
                        seed=seed,
                        instruction=_fill(template, variant.vars, where=f"{task.name}/{name}"),
                        max_turns=task.max_turns or self.max_turns,
                        success=task.success,
                        forbidden_tools=list(task.forbidden_tools),
                        scene=dict(variant.scene),
                        overrides=[
                            *([f"{self.seed_option}={seed}"] if self.seed_option else []),
                            *(
                                [f"evaluation.task_check={task.check or self.check}"]
                                if task.check or self.check
                                else []
                            ),
                            *self.set,
                            *task.set,
                            *variant.set,
                        ],
                    )
                )
        return plans


class EpisodePlan(_Model):
    """One episode as the suite defines it (before a deployment config is applied)."""

    key: str
    task: str
    family: str
    variant: str
    seed: int
    instruction: str
    max_turns: int | None
    success: SuccessCheck
    forbidden_tools: list[str] = Field(default_factory=list)
    scene: dict[str, Any] = Field(default_factory=dict)
    overrides: list[str] = Field(default_factory=list)

    @property
    def slug(self) -> str:
        """The episode's folder name (its key with ``/`` as ``.``)."""
        return self.key.replace("/", ".")


def _fill(template: str, values: dict[str, Any], *, where: str) -> str:
    """The template with its ``{placeholders}`` filled; a placeholder without a value is a
    suite error (never sent to a model as literal braces)."""
    names = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    bad = [name for name in names if not name.isidentifier()]
    if bad:
        raise ConfigError(
            f"{where}: instruction placeholder {{{bad[0]}}} must be a plain name",
            key="instruction",
            value=template,
        )
    missing = [name for name in names if name not in values]
    if missing:
        raise ConfigError(
            f"{where}: the instruction {template!r} needs {{{missing[0]}}}, but the variant "
            f"gives {', '.join(sorted(values)) or 'no vars'}",
            key="vars",
            value=template,
        )
    return template.format_map(values).strip()


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file; a ConfigError names the file and the key."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"suite file not found: {file}", key="suite", value=str(file))
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {exc}", key="suite") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be a mapping", key="suite")
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(
            format_validation_error(exc, source=f"suite {file}"),
            key=".".join(str(part) for part in first["loc"]),
            value=first.get("input"),
        ) from None
    suite = suite.model_copy(update={"path": str(file.resolve())})
    suite.plans()  # templates and variables are checked now, not mid-run
    return suite

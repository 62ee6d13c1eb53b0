"""Building the embodied parts of a Harness from config: profile, driver, safety envelope,
physical tools and the evaluator (called from :func:`harness.assembly.build.build_parts`).

Order matters: the profile first (the driver and envelope read it), then the driver
(connected here, so its closer is registered at once), then what is derived from both.
Parts passed to ``Harness.from_config(...)`` are used instead of being built, and derived
parts are built for them (a given driver still gets its tools and envelope).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from embodiment.drivers import DriverOptionError
from embodiment.envelope import SafetyEnvelope
from embodiment.lease import HardwareLease, hardware_identity
from embodiment.profile import EmbodimentProfile, ProfileError, render_profile
from embodiment.types import ActionSpec
from harness.config import HarnessConfig
from harness.errors import ConfigError
from harness.providers import build_model
from harness.world.evaluation import ModelEvaluator, ProgrammaticEvaluator
from harness.world.model_task_check import ModelTaskCheck
from harness.world.physical import physical_tools
from harness.world.predicate_check import PredicateTaskCheck, has_goal_predicates
from harness.world.task_check import GroundTruthTaskCheck, TaskCheck
from worlds.registry import PluginError, build_driver, load_profile

__all__ = ["build_embodiment_parts", "build_profile", "build_task_check", "construct_driver"]

Closer = tuple[str, Callable[[], None]]


def build_profile(config: HarnessConfig) -> EmbodimentProfile | None:
    """The configured profile (built-in name, a world's profile name, file, inline
    mapping) or None."""
    if config.embodiment is None:
        return None
    try:
        return load_profile(config.embodiment, base_dir=config.base_dir)
    except ProfileError as exc:
        raise ConfigError(f"embodiment: {exc}", key="embodiment", value=config.embodiment) from None


def build_embodiment_parts(
    config: HarnessConfig, parts: dict[str, Any], closers: list[Closer]
) -> EmbodimentProfile | None:
    """Fill ``parts`` with driver, physical_tools, safety, evaluator, task_check and
    profile_text."""
    profile = parts.pop("profile", None) or build_profile(config)
    if profile is not None:
        parts.setdefault("profile_text", render_profile(profile))

    driver = parts.get("driver")
    if driver is None and config.driver is not None:
        if profile is None:
            raise ConfigError(
                f"driver: {config.driver.name!r} needs an embodiment profile; set `embodiment`",
                key="embodiment",
                value=None,
            )
        driver = construct_driver(config, profile)
        lease = _lease_for(config, driver)
        if lease is not None:
            lease.acquire()  # HardwareBusyError names the holder; nothing is connected yet
            closers.append((f"hardware lease {lease.identity}", lease.release))
        driver.connect()
        closers.append((f"driver {config.driver.name}", driver.disconnect))
        parts["driver"] = driver
    if driver is None:
        if "task_check" not in parts:
            parts["task_check"] = build_task_check(
                config, driver=None, observe=_observe_of(parts.get("observation_provider"))
            )
        return profile

    specs: list[ActionSpec] = list(driver.capabilities()) if _has(driver, "capabilities") else []
    if "physical_tools" not in parts and specs:
        parts["physical_tools"] = physical_tools(
            driver, observation=config.observation, specs=specs
        )
    if "safety" not in parts and profile is not None:
        parts["safety"] = SafetyEnvelope(
            profile,
            locator=driver if _has(driver, "locate") else None,
            observe=driver.observe if _has(driver, "observe") else None,
        )
    if "evaluator" not in parts:
        evaluator = _build_evaluator(config, driver, specs)
        if evaluator is not None:
            parts["evaluator"] = evaluator
    if "task_check" not in parts:
        observe = _observe_of(parts.get("observation_provider")) or _observe_of(driver)
        parts["task_check"] = build_task_check(config, driver=driver, observe=observe)
    return profile


def construct_driver(config: HarnessConfig, profile: EmbodimentProfile) -> Any:
    """The configured driver, constructed but not connected (a bad option or a driver that
    cannot be imported is a ConfigError naming the key)."""
    assert config.driver is not None
    options = dict(config.driver.model_extra or {})
    try:
        return build_driver(config.driver.name, profile=profile, options=options)
    except DriverOptionError as exc:
        raise ConfigError(str(exc), key=exc.key, value=exc.value) from None
    except PluginError as exc:
        raise ConfigError(
            f"driver.name: {exc}", key="driver.name", value=config.driver.name
        ) from None
    except ImportError as exc:
        raise ConfigError(
            f"driver.name: {config.driver.name!r} cannot be loaded: {exc}",
            key="driver.name",
            value=config.driver.name,
        ) from None


def _lease_for(config: HarnessConfig, driver: Any) -> HardwareLease | None:
    """The lease a driver of physical hardware needs before it connects (None for a
    simulator): the closers run in reverse, so it is released after the disconnect."""
    identity = hardware_identity(driver)
    if identity is None or config.driver is None:
        return None
    folder = config.resolve_path(config.driver.lease_dir) if config.driver.lease_dir else None
    return HardwareLease(identity, timeout_s=config.driver.lease_timeout_s, folder=folder)


def build_task_check(
    config: HarnessConfig, *, driver: Any, observe: Callable[[], Any] | None
) -> TaskCheck | None:
    """The whole-task check ``evaluation.task_check`` asks for (see its docstring). A
    driver that judges its own task (a benchmark's goal predicates) is the programmatic check."""
    cfg = config.evaluation
    mode = cfg.task_check
    own_goal = driver is not None and has_goal_predicates(driver)
    ground_truth = own_goal or (
        driver is not None and _has(driver, "detections") and _has(driver, "post_conditions")
    )
    if mode == "auto":
        if cfg.model is not None and observe is not None:
            mode = "model"
        elif ground_truth:
            mode = "programmatic"
        else:
            return None
    if mode == "none":
        return None
    if mode == "programmatic":
        if not ground_truth:
            raise ConfigError(
                "evaluation.task_check: 'programmatic' needs a driver with ground truth "
                "(detections() and post_conditions(), or its own goal predicates); "
                f"{type(driver).__name__ if driver is not None else 'no driver'} has none; "
                "use 'model' with evaluation.model for a real robot",
                key="evaluation.task_check",
                value=cfg.task_check,
            )
        if own_goal:
            return PredicateTaskCheck.of(driver)
        return GroundTruthTaskCheck(driver.detections, driver.post_conditions())
    if observe is None:
        raise ConfigError(
            "evaluation.task_check: 'model' judges camera images after the task, but there is "
            "no driver or observation provider to take them",
            key="evaluation.task_check",
            value=cfg.task_check,
        )
    return ModelTaskCheck(
        build_model(cfg.model or config.model), observe, image_settings=config.observation
    )


def _observe_of(provider: Any) -> Callable[[], Any] | None:
    observe = getattr(provider, "observe", None)
    return observe if callable(observe) else None


def _build_evaluator(config: HarnessConfig, driver: Any, specs: list[ActionSpec]) -> Any:
    cfg = config.evaluation
    if not cfg.required_tools or cfg.evaluator == "none":
        return None
    wants_model = cfg.evaluator == "model" or (cfg.evaluator == "auto" and cfg.model is not None)
    if wants_model:
        model_config = cfg.model or config.model
        conditions: dict[str, str | ActionSpec] = {s.name: s for s in specs if s.post_condition}
        conditions.update(cfg.post_conditions)
        missing = [name for name in cfg.required_tools if name not in conditions]
        if missing:
            raise ConfigError(
                f"evaluation.post_conditions: no post-condition for {', '.join(missing)}; the "
                "model evaluator needs one per required tool",
                key="evaluation.post_conditions",
                value=sorted(conditions),
            )
        return ModelEvaluator(
            build_model(model_config),
            post_conditions=conditions,
            segment_tools=cfg.segment_tools,
            image_settings=config.observation,
        )
    if _has(driver, "post_conditions"):
        return ProgrammaticEvaluator(driver.post_conditions())
    raise ConfigError(
        f"evaluation.required_tools: {', '.join(cfg.required_tools)} must be evaluated, but the "
        "driver has no programmatic post-conditions; set evaluation.model to a vision model",
        key="evaluation.model",
        value=None,
    )


def _has(obj: Any, method: str) -> bool:
    return callable(getattr(obj, method, None))

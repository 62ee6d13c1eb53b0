"""Deployment checks behind ``harness check``: small named checks over a built Harness.

Each check looks at one part and says what it found (``ok``), what looks wrong but will
run (``warn``) or what will not work (``fail``). Parts plug in two ways, so a new part
never needs an edit here:

- a module registers a check function: ``register_check("mcp", check_mcp_servers)``;
- any part object the Harness holds (driver, safety envelope, scene, skills, memory,
  evaluator, store, model) may define ``self_check() -> Iterable[CheckResult]``.

Checks never move the robot and never call a paid model.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from harness.assembly.build import subagent_model_config
from harness.config import HarnessConfig
from harness.context import Context
from harness.context.window import lane_budget
from harness.errors import ConfigError
from harness.store import SQLiteRunStore
from harness.store.reader import RunLog
from harness.store.schema import SCHEMA_VERSION
from harness.tools import ToolRegistry

__all__ = [
    "CHECKS",
    "PART_ATTRIBUTES",
    "CheckFn",
    "CheckResult",
    "Deployment",
    "register_check",
    "run_checks",
]

CheckStatus = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class CheckResult:
    status: CheckStatus
    subject: str
    detail: str

    @classmethod
    def ok(cls, subject: str, detail: str) -> CheckResult:
        return cls("ok", subject, detail)

    @classmethod
    def warn(cls, subject: str, detail: str) -> CheckResult:
        return cls("warn", subject, detail)

    @classmethod
    def fail(cls, subject: str, detail: str) -> CheckResult:
        return cls("fail", subject, detail)


class Deployment(Protocol):
    """What the checks read of a built Harness (its parts, by the names it exposes)."""

    config: HarnessConfig
    context: Context
    tools: ToolRegistry
    driver: Any
    safety: Any
    skills: Any
    store: Any
    profile_text: str


CheckFn = Callable[[Deployment], Iterable[CheckResult]]

CHECKS: dict[str, CheckFn] = {}
"""Check name -> function, run in registration order."""

PART_ATTRIBUTES: tuple[str, ...] = (
    "model",
    "driver",
    "safety",
    "scene",
    "skills",
    "memory",
    "evaluator",
    "store",
)
"""Harness attributes whose objects may report through ``self_check()``."""

CONNECT_TIMEOUT_S = 2.0


def register_check(name: str, check: CheckFn) -> None:
    """Add (or replace) a named check."""
    CHECKS[name] = check


def run_checks(harness: Deployment) -> Iterator[CheckResult]:
    """Every registered check, then every part's ``self_check()``; a check that raises is
    reported as a failure of that check, and the others still run."""
    for name, check in list(CHECKS.items()):
        yield from _guarded(name, lambda check=check: check(harness))
    for attribute in PART_ATTRIBUTES:
        part = getattr(harness, attribute, None)
        hook = getattr(part, "self_check", None)
        if callable(hook):
            yield from _guarded(attribute, hook)


def _guarded(name: str, produce: Callable[[], Iterable[CheckResult]]) -> Iterator[CheckResult]:
    try:
        results = list(produce())
    except Exception as exc:
        yield CheckResult.fail(name, f"check raised {type(exc).__name__}: {exc}")
        return
    yield from results


# ====================================================================== built-in checks


def check_model(harness: Deployment) -> Iterator[CheckResult]:
    """Provider and name, the API key variable (set or not, never its value), the window,
    and whether a configured ``base_url`` accepts connections."""
    m = harness.config.model
    where = f" at {m.base_url}" if m.base_url else ""
    yield CheckResult.ok("model", f"{m.provider}:{m.name}{where}")
    if m.api_key_env:
        if os.environ.get(m.api_key_env):
            yield CheckResult.ok("model key", f"{m.api_key_env} is set")
        else:
            yield CheckResult.fail(
                "model key", f"model.api_key_env names {m.api_key_env}, which is not set"
            )
    if m.base_url:
        yield _reachable("model endpoint", m.base_url)
    budget = harness.context.budget
    yield CheckResult.ok(
        "context",
        f"context window {budget.context_window} tokens, compaction at {budget.threshold} "
        f"(reserve {budget.reserve_tokens})",
    )
    pressure = budget.pressure
    if pressure is not None:
        levels = pressure.describe()
    elif not harness.config.context.pressure.enabled:
        levels = "off (context.pressure.enabled: false)"
    else:
        levels = (
            f"off: context.compaction.reserve_tokens is set, so compaction at "
            f"{budget.threshold} is the only level (set context.pressure.* for a nudge and "
            "a cleanup before it)"
        )
    yield CheckResult.ok("pressure", levels)
    if m.prices is None and m.provider not in ("planner", "scripted"):
        yield CheckResult.warn("model prices", "model.prices unset: runs will show no cost")


def _reachable(subject: str, url: str) -> CheckResult:
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        return CheckResult.fail(subject, f"{url!r} has no host")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        return CheckResult.fail(subject, f"{host}:{port} is not reachable: {exc}")
    return CheckResult.ok(subject, f"{host}:{port} accepts connections")


def check_tools(harness: Deployment) -> Iterator[CheckResult]:
    tools = harness.tools.visible()
    yield CheckResult.ok("tools", f"{len(tools)}: {', '.join(t.name for t in tools)}")
    physical = [t.name for t in tools if t.physical]
    if physical and harness.safety is None:  # safe (blocked), but those tools never run
        yield CheckResult.warn(
            "safety",
            f"physical tools {', '.join(physical)} have NO safety envelope: every call "
            "will be blocked",
        )
    elif physical:
        yield CheckResult.ok(
            "safety", f"{type(harness.safety).__name__} guards {', '.join(physical)}"
        )
        yield from check_declarations(harness, [t for t in tools if t.physical])


def check_tool_fit(harness: Deployment) -> Iterator[CheckResult]:
    """The selection every task starts with (``harness run`` refuses to start when it
    fails): whether the tool definitions fit the model's window, counted by the model's
    server where it can count, and which optional features a small window leaves out."""
    offer_of = getattr(harness, "tool_offer", None)
    if not callable(offer_of):
        return
    offer = offer_of()
    estimator = harness.context.estimator
    how = "as the model's server counts them" if estimator.server_counted else "estimated"
    admission = offer.admission
    size = (
        f"about {admission.needed} tokens {how}, ceiling {admission.ceiling}"
        if admission is not None
        else how
    )
    if offer.refusal is not None:
        yield CheckResult.fail("tool fit", offer.refusal)
        return
    notice = offer.notice()
    if notice is not None:
        yield CheckResult.warn("tool fit", notice)
        return
    yield CheckResult.ok("tool fit", f"{len(offer.offered)} tool definitions: {size}")


def check_declarations(harness: Deployment, physical: list[Any]) -> Iterator[CheckResult]:
    """Physical tools the embodiment's envelope will block whatever the model sends,
    because their declaration does not cover their arguments (the envelope's own rule)."""
    from embodiment.declarations import declaration_problems

    profile = getattr(harness.safety, "profile", None)
    listed = set(getattr(getattr(profile, "safety", None), "no_argument_tools", []) or [])
    if profile is None:
        return  # a custom gate decides by its own rules
    for tool in physical:
        if tool.source.startswith("mcp:") and not tool.safety_declared:
            continue  # the MCP checks say so, naming the config key to add
        problems = declaration_problems(
            tool.name,
            {},
            tool.safety if tool.safety_declared else None,
            tool.parameters,
            listed_without_arguments=tool.name in listed,
        )
        if problems:
            yield CheckResult.warn(
                f"safety {tool.name}", f"every call will be blocked: {'; '.join(problems)}"
            )
            continue
        yield from _motion_check(harness, tool)


def _motion_check(harness: Deployment, tool: Any) -> Iterator[CheckResult]:
    """How the envelope checks the tool's motion (the envelope's own answer)."""
    describe = getattr(harness.safety, "motion_check", None)
    if describe is None:
        return
    answer = describe(
        tool.name,
        tool.safety if tool.safety_declared else None,
        describes_motion=getattr(tool, "motion", None) is not None,
    )
    status = CheckResult.warn if answer.warning else CheckResult.ok
    yield status(f"motion {tool.name}", answer.detail)


def check_embodiment(harness: Deployment) -> Iterator[CheckResult]:
    config = harness.config
    if harness.profile_text:
        first = harness.profile_text.strip().splitlines()[0]
        yield CheckResult.ok("profile", first[:120])
    elif config.embodiment is not None:
        yield CheckResult.warn(
            "profile", f"embodiment {config.embodiment!r} is configured but no profile was built"
        )
    if harness.driver is not None:
        yield CheckResult.ok("driver", type(harness.driver).__name__)
        yield from _driver_contract(harness)
    elif config.driver is not None:
        yield CheckResult.warn("driver", f"driver {config.driver.name!r} is configured but absent")
    check = getattr(harness, "task_check", None)
    if check is not None:
        who = getattr(check, "name", type(check).__name__)
        yield CheckResult.ok("task check", f"{check.kind} ({who}): done.outcome is checked")
    else:
        yield CheckResult.warn(
            "task check",
            "none (evaluation.task_check): a completed task's outcome stays unverified and "
            "exit code 0 rests on the model's report",
        )


def _driver_contract(harness: Deployment) -> Iterator[CheckResult]:
    """``embodiment.checks.check_driver`` against the configured profile, without motion:
    a driver that cannot give the readings the profile's safety rules need (a mobile base
    profile on a fixed arm's driver) fails here instead of blocking every action at run time."""
    from embodiment.checks import check_driver
    from harness.assembly.embodiment import build_profile

    profile = build_profile(harness.config)
    if profile is None:
        return
    report = check_driver(harness.driver, profile, motion=False)
    status = {"pass": "ok", "warn": "warn", "skip": "ok", "fail": "fail"}
    for result in report.results:
        if result.status in ("fail", "warn"):
            yield CheckResult(status[result.status], f"driver {result.name}", result.detail)
    passed = sum(result.status == "pass" for result in report.results)
    if report.ok:
        yield CheckResult.ok(
            "driver checks",
            f"{passed} of {len(report.results)} passed against profile {profile.name!r} "
            "(motion checks skipped: `harness check` never moves the robot)",
        )


def check_skills_and_memory(harness: Deployment) -> Iterator[CheckResult]:
    if harness.skills is not None:
        names = harness.skills.names()
        yield CheckResult.ok("skills", f"{len(names)}: {', '.join(names)}")
    memory = harness.config.memory
    if memory.enabled:
        yield _writable_folder("memory", harness.config.resolve_path(memory.path))


def check_store(harness: Deployment) -> Iterator[CheckResult]:
    """Opens (migrating) the configured store folder and records nothing; a folder that
    is not there yet is only checked to be creatable (a check leaves no folder behind)."""
    if not harness.config.run.store:
        yield CheckResult.warn("run store", "run.store is null: runs are kept in memory only")
        return
    folder = harness.config.resolve_path(harness.config.run.store)
    if not folder.exists():
        yield _writable_folder("run store", folder)
        return
    try:
        SQLiteRunStore(folder).close()
        with RunLog(folder) as log:
            sessions = len(log.sessions())
    except Exception as exc:
        yield CheckResult.fail("run store", f"{folder}: {exc}")
        return
    yield CheckResult.ok(
        "run store", f"{folder} (SQLite WAL, schema v{SCHEMA_VERSION}, {sessions} sessions)"
    )


def check_mcp(harness: Deployment) -> Iterator[CheckResult]:
    """Every configured MCP server: probed live when its tool source offers ``check()``
    (statuses with ``name``, ``ok``, ``state``, ``last_error``), otherwise reachable when
    the tools it listed while the Harness was built are registered."""
    probed: set[str] = set()
    for source in getattr(harness, "tool_sources", []):
        probe = getattr(source, "check", None)
        for status in probe() if callable(probe) else []:
            probed.add(status.name)
            offered = [t for t in harness.tools if t.source == f"mcp:{status.name}"]
            physical = sum(1 for t in offered if t.physical)
            pid = getattr(status, "pid", None)
            where = f"pid {pid}" if pid else getattr(status, "transport", "")
            protocol = getattr(status, "protocol_version", "?")
            if status.ok:
                yield CheckResult.ok(
                    f"mcp server {status.name}",
                    f"({where}, protocol {protocol}): {len(offered)} tools offered, "
                    f"{physical} physical",
                )
            else:
                yield CheckResult.fail(
                    f"mcp server {status.name}",
                    f"{status.state} ({getattr(status, 'last_error', '')})",
                )
        skipped = getattr(source, "skipped_tools", None)
        for name, reason in (skipped() if callable(skipped) else {}).items():
            yield CheckResult.warn(f"mcp tool {name}", f"not offered: {reason}")
    yield from _mcp_tool_hints(harness)
    for server in harness.config.mcp.servers:
        if server.name in probed:
            continue
        names = [t.name for t in harness.tools if t.source == f"mcp:{server.name}"]
        if names:
            yield CheckResult.ok(
                f"mcp server {server.name}", f"{len(names)} tools: {', '.join(names)}"
            )
        else:
            yield CheckResult.fail(
                f"mcp server {server.name}",
                f"no tools registered from its {server.transport} server",
            )


def _mcp_tool_hints(harness: Deployment) -> Iterator[CheckResult]:
    """What the configuration says about each MCP tool against what its server says
    (``annotations``): a physical tool the envelope cannot check, a tool the server calls
    destructive that is not physical, a physical tool the server calls read-only."""
    for tool in harness.tools:
        if not tool.source.startswith("mcp:"):
            continue
        hints = getattr(tool, "annotations", None) or {}
        if tool.physical and not tool.safety_declared:
            yield CheckResult.warn(
                f"mcp tool {tool.name}",
                "physical but no `safety` map says which argument is what: the safety "
                "envelope blocks every call (add it under mcp.servers[].safety)",
            )
        if not tool.physical and hints.get("destructiveHint") is True:
            yield CheckResult.warn(
                f"mcp tool {tool.name}",
                "its server marks it destructive (destructiveHint) but it is not listed in "
                "`physical`: if it moves hardware, list it so the safety envelope checks it",
            )
        if tool.physical and hints.get("readOnlyHint") is True:
            yield CheckResult.warn(
                f"mcp tool {tool.name}",
                "listed in `physical` but its server marks it read-only (readOnlyHint): it "
                "may need no safety envelope",
            )


def check_subagents(harness: Deployment) -> Iterator[CheckResult]:
    """With ``subagents.enabled``: the children's model and its window (a child refuses to
    start when the window is unknown, so that is a failure here), and whether children may
    be given physical tools."""
    cfg = harness.config.subagents
    if not cfg.enabled:
        return
    model = getattr(harness, "subagent_model", None)
    if model is None:
        budget = harness.context.budget
        yield CheckResult.ok(
            "sub-agents",
            f"the main model, window {budget.context_window}; at most {cfg.max_turns} turns, "
            f"{cfg.max_tokens} tokens each",
        )
    else:
        chosen = subagent_model_config(harness.config)
        try:
            budget = lane_budget(harness.config, model, chosen.context_window if chosen else None)
        except ConfigError as exc:
            yield CheckResult.fail("sub-agents", str(exc))
        else:
            yield CheckResult.ok(
                "sub-agents",
                f"model {model.name}, window {budget.context_window}; at most "
                f"{cfg.max_turns} turns, {cfg.max_tokens} tokens each",
            )
    if cfg.physical:
        yield CheckResult.warn(
            "sub-agents",
            "subagents.physical is true: children may be given tools that move "
            "hardware (through the same safety envelope)",
        )


def _writable_folder(subject: str, folder: Path) -> CheckResult:
    probe = folder if folder.exists() else next((p for p in folder.parents if p.exists()), None)
    if probe is None or not os.access(probe, os.W_OK):
        return CheckResult.fail(subject, f"{folder} is not writable")
    return CheckResult.ok(subject, f"{folder}" + ("" if folder.exists() else " (will be created)"))


for _name, _check in (
    ("model", check_model),
    ("tools", check_tools),
    ("tool fit", check_tool_fit),
    ("embodiment", check_embodiment),
    ("skills", check_skills_and_memory),
    ("store", check_store),
    ("mcp", check_mcp),
    ("subagents", check_subagents),
):
    register_check(_name, _check)

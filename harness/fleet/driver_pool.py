"""One simulator per worker process, reused across its episodes.

Building some worlds' drivers is slow (a benchmark's MuJoCo env takes 10-25 s) while
switching a built one to another task or initial state is fast. A driver its world declares reusable
(:class:`worlds.DriverEntry`: ``reusable`` with its ``select_options``; it has
``select(**options)``, which rebuilds only what the new options need) is kept here
between the episodes a worker runs: the episode's select options go to ``select`` and
the same driver is handed to the episode's Harness (``Harness.from_config(...,
driver=...)``), which then neither connects nor closes it. Other drivers (cheap to
build) are built per episode as before.

The pool is per process (local workers and Ray actors each have their own); :func:`close`
disconnects what it holds, and runs at interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import threading
from typing import Any

from worlds.registry import driver_entry

__all__ = ["close", "driver_for"]

logger = logging.getLogger("harness.fleet")

_lock = threading.Lock()
_pool: dict[str, Any] = {}


def _key(name: str, options: dict[str, Any], select: tuple[str, ...]) -> str:
    fixed = {k: v for k, v in options.items() if k not in select}
    return name + ":" + json.dumps(fixed, sort_keys=True, default=str)


def driver_for(config: Any) -> Any | None:
    """The pooled driver for this episode's config, switched to its task and initial
    state; None when the config's driver is not one to pool."""
    from harness.assembly.embodiment import build_profile, construct_driver

    if config.driver is None:
        return None
    entry = driver_entry(config.driver.name)
    if entry is None or not entry.reusable:
        return None
    options = dict(config.driver.model_extra or {})
    key = _key(config.driver.name, options, entry.select_options)
    with _lock:
        driver = _pool.get(key)
        if driver is None:
            profile = build_profile(config)
            driver = construct_driver(config, profile)
            driver.connect()
            _pool[key] = driver
            return driver
    chosen = {k: options[k] for k in entry.select_options if k in options}
    try:
        driver.select(**chosen)
    except Exception:
        with _lock:
            _pool.pop(key, None)
        with contextlib.suppress(Exception):
            driver.disconnect()
        raise
    return driver


def close() -> None:
    """Disconnect every pooled driver."""
    with _lock:
        drivers = list(_pool.values())
        _pool.clear()
    for driver in drivers:
        try:
            driver.disconnect()
        except Exception as exc:  # teardown noise (EGL) must not mask the eval's result
            logger.debug("pooled driver disconnect: %s", exc)


atexit.register(close)

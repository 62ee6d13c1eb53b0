"""Errors of the embodiment package (kept apart so every module can raise them)."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["HardwareBusyError", "ProfileError"]


class ProfileError(ValueError):
    """A profile is missing an item or contradicts itself; each line names the field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"invalid embodiment profile {source}:\n  " + "\n  ".join(problems))


class HardwareBusyError(RuntimeError):
    """Another holder has the lease on this hardware (see :mod:`embodiment.lease`): a
    second Harness must not connect to a robot that one is already driving."""

    def __init__(
        self,
        identity: str,
        *,
        holder: dict[str, Any] | None = None,
        waited_s: float = 0.0,
        lease: str = "",
    ) -> None:
        self.identity = identity
        self.holder = holder
        self.waited_s = waited_s
        self.lease = lease
        if holder:
            since = time.strftime("%H:%M:%S", time.localtime(float(holder.get("since", 0))))
            who = f"process {holder.get('pid')} on {holder.get('host')} since {since}"
            if holder.get("owner"):
                who += f" ({holder['owner']})"
        else:
            who = "another process"
        waited = f"after waiting {waited_s:.1f} s" if waited_s >= 0.05 else "at once"
        super().__init__(
            f"hardware {identity!r} is in use by {who}; refused {waited} (one Harness drives "
            "a robot at a time: close the other one, or raise driver.lease_timeout_s to wait "
            f"for it; lease file {lease})"
        )

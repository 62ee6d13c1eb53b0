"""A package's public names, imported from their modules on first use.

A package ``__init__`` that re-exported its modules' names loaded every module the first
time anything below it was imported: the ``harness`` command paid for pydantic models and
numpy before it knew which subcommand it ran. A package lists where each name lives and
gets ``__getattr__`` and ``__dir__`` from :func:`lazy_names` (PEP 562); the first use of a
name imports its module and keeps the value on the package. It lives here, in the lowest
layer, so that ``embodiment`` and ``harness`` share one rule.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``homes`` maps each name to the
    module it is imported from on first use; ``public`` is the package's ``__all__``."""
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *public})

    return __getattr__, __dir__

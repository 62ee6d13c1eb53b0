"""Import PyBullet without its build-time banner.

PyBullet's C extension prints ``pybullet build time: ...`` when it is imported (on stdout
or stderr, buffered, depending on the build), which would land in the middle of a CLI's
output or a ``--json`` stream. It is silenced by pointing descriptors 1 and 2 at
``/dev/null`` while importing and flushing C's stdio buffers before restoring them.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import sys
from types import ModuleType

__all__ = ["import_pybullet", "pybullet_available"]

_MODULE: ModuleType | None = None


def _flush_c_stdout() -> None:
    with contextlib.suppress(OSError, AttributeError):  # non-POSIX platforms
        ctypes.CDLL(None).fflush(None)


def import_pybullet() -> ModuleType:
    """``import pybullet`` with the banner suppressed; raises ImportError with a hint."""
    global _MODULE
    if _MODULE is not None:
        return _MODULE
    if "pybullet" in sys.modules:
        _MODULE = sys.modules["pybullet"]
        return _MODULE
    sys.stdout.flush()
    sys.stderr.flush()
    saved: dict[int, int] = {}
    devnull: int | None = None
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            saved[fd] = os.dup(fd)
            os.dup2(devnull, fd)
    except OSError:  # no usable descriptors: import normally
        pass
    try:
        module = importlib.import_module("pybullet")
        _flush_c_stdout()
    except ImportError as exc:
        raise ImportError(
            "the built-in simulator needs PyBullet: pip install 'embodied-harness[sim]' "
            f"(PyBullet ships wheels for Python 3.10 and 3.11) ({exc})"
        ) from exc
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        if devnull is not None:
            os.close(devnull)
    _MODULE = module
    return module


def pybullet_available() -> bool:
    """Whether PyBullet can be imported (without importing it)."""
    return importlib.util.find_spec("pybullet") is not None

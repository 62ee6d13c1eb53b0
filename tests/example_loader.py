"""``examples/real_provider.py`` loaded as a module, for the tests that run it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "real_provider.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("real_provider_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

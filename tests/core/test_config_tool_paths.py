"""Config entries that import code (``tools:``, ``scene.perception``): every malformed
path is a configuration error naming the key and the value, never a bare exception.

Found in the third attack round: ``tools: ['..relative:x']`` raised ``TypeError`` from
``importlib`` (a relative module name needs a package).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.assembly.imports import import_object, import_tool
from harness.errors import ConfigError
from tests.tiers import examples

MALFORMED = [
    "..relative:x",
    ".relative:x",
    "pkg..mod:x",
    "pkg.:x",
    " os:getcwd",
    "1abc:x",
    "a-b:x",
    "os/path:join",
    "\x00:x",
    "é.\u0301:x",
]


@pytest.mark.parametrize("path", MALFORMED)
def test_a_malformed_module_name_is_a_config_error_naming_the_key(path: str) -> None:
    with pytest.raises(ConfigError) as info:
        import_tool(path)
    assert info.value.key == "tools"
    assert "tools:" in str(info.value) and repr(path) in str(info.value)


@settings(max_examples=examples(400), deadline=None)
@given(module=st.text(max_size=30), attr=st.text(max_size=10))
def test_any_text_is_a_tool_or_a_config_error(module: str, attr: str) -> None:
    """Whatever is written under ``tools:``, the only exception is ConfigError."""
    try:
        import_object(f"{module}:{attr}", key="tools")
    except ConfigError as exc:
        assert exc.key == "tools"


def test_a_config_with_a_relative_tool_path_fails_with_the_config_error(tmp_path) -> None:
    from harness.config import HarnessConfig
    from harness.runtime.harness import Harness

    config = HarnessConfig.model_validate(
        {"tools": ["..relative:x"], "driver": None, "embodiment": None, "run": {"store": None}}
    )
    with pytest.raises(ConfigError, match=r"tools: .*'\.\.relative:x'"):
        Harness.from_config(config)


def test_a_module_that_fails_at_import_is_a_config_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "broken_tools_mod.py").write_text("def f(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="SyntaxError"):
        import_tool("broken_tools_mod:f")

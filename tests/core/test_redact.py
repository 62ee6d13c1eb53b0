from __future__ import annotations

import pytest

from harness.redact import REDACTED, Redactor


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
        "api_key=abcdef0123456789abcd",
        "AKIAABCDEFGHIJKLMNOP",
    ],
)
def test_builtin_patterns(secret: str) -> None:
    text = f"before {secret} after"
    redacted = Redactor().text(text)
    assert secret not in redacted and REDACTED in redacted
    assert redacted.startswith("before ") and redacted.endswith(" after")


def test_env_var_values_and_custom_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ROBOT_TOKEN", "robot-token-123456")
    r = Redactor([r"serial-\d{6}"], env_vars=["MY_ROBOT_TOKEN", "UNSET_VAR"])
    out = r.value({"a": ["robot-token-123456", "serial-123456"], "b": ("ok",), "n": 3})
    assert out == {"a": [REDACTED, REDACTED], "b": ("ok",), "n": 3}


def test_ordinary_text_is_untouched() -> None:
    text = "pick red_cube_1 at (0.412, -0.105, 0.645); error E42; skill-loaded"
    assert Redactor().text(text) == text

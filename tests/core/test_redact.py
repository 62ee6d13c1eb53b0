from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.redact import REDACTED, Redactor
from tests.tiers import examples


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


SECRET = "sk-proj-QWERTYUIOPASDFGHJKLZXCVBNM0123"
PIECES = [SECRET, SECRET[:14], SECRET[-12:], "pick red_cube_1", "Bearer ", "x" * 40, "\n", " "]


@settings(max_examples=examples(300), deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(PIECES), max_size=6).map("".join) | st.text(max_size=60),
        max_size=40,
    ),
    budget=st.sampled_from([0, 16, 64, 100_000]),
    repeats=st.integers(1, 3),
)
def test_a_kept_answer_is_the_answer_a_fresh_redactor_gives(
    texts: list[str], budget: int, repeats: int
) -> None:
    """Texts seen again (in any order, with the cache evicting at any point) are redacted
    exactly as a redactor that has seen nothing redacts them, and the planted key never
    survives; the cache never holds more than its budget."""
    kept = Redactor(literals=[SECRET], cache_chars=budget)
    for text in texts * repeats:
        fresh = Redactor(literals=[SECRET], cache_chars=0).text(text)
        assert kept.text(text) == fresh
        assert SECRET not in fresh and SECRET[:14] not in fresh
        assert kept.cached_chars <= budget

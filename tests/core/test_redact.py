from __future__ import annotations

import random

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


SHAPES = [
    r"sk-ant-[A-Za-z0-9_\-]{16,}",
    r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}",
    r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*",
    r"(?i:api[_-]?key|x-api-key|access[_-]?token|secret)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9._\-]{12,}",
    r"AKIA[0-9A-Z]{16}",
    r"gh[pousr]_[A-Za-z0-9]{30,}",
]
"""The built-in secret shapes, written out here (not read from the module) so the test
breaks if the module's list drifts from them."""
KNOWN = "tok9-Zq7!x"
"""A known secret value (10 characters: no fragment pass, so the output is the pass's)."""
KNOWS_ONLY_SHAPES, KNOWS_A_VALUE = (
    Redactor(cache_chars=0),
    Redactor(literals=[KNOWN], cache_chars=0),
)
NEAR_MISSES = ["sk", "-", "bear", "er", "api", "ap", "key", "acc", "ess", "secr", "et", "AKI", "gh"]
ASCII = st.characters(min_codepoint=32, max_codepoint=126)
ASCII_ANY = st.characters(max_codepoint=127)


def _flip_case(draw: st.DrawFn, text: str) -> str:
    """``text`` with a drawn half of its letters' case flipped (one draw, not one a letter:
    hypothesis spends most of such a test drawing)."""
    flips = random.Random(draw(st.integers(0, 2**32))).getrandbits(max(1, len(text)))
    return "".join(c.swapcase() if flips >> i & 1 else c for i, c in enumerate(text))


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data(), shape=st.sampled_from(SHAPES))
def test_every_match_of_a_shape_wakes_the_triggers(data: st.DataObject, shape: str) -> None:
    """Matches drawn from each pattern itself, in ASCII (case flipped where the pattern
    ignores case, still a match): the triggers must never let one skip the pattern pass."""
    import regex

    match = data.draw(st.from_regex(shape, fullmatch=True, alphabet=ASCII_ANY))
    flipped = _flip_case(data.draw, match)
    for sample in (match, flipped):
        if regex.fullmatch(shape, sample):
            assert KNOWS_ONLY_SHAPES.triggers.could_match(sample), sample
            assert KNOWS_ONLY_SHAPES.text(f"<{sample}>") != f"<{sample}>"


@st.composite
def _texts_around_secrets(draw: st.DrawFn) -> str:
    """A mostly-ASCII text of pieces: whole shapes (drawn from the patterns), shapes cut
    anywhere or with their case flipped, near misses, noise; sometimes the known value,
    sometimes non-ASCII characters."""
    piece = st.one_of(
        st.sampled_from(SHAPES).flatmap(
            lambda s: st.from_regex(s, fullmatch=True, alphabet=ASCII_ANY)
        ),
        st.sampled_from(NEAR_MISSES),
        st.text(ASCII, max_size=20),
    )
    pieces = []
    for raw in draw(st.lists(piece, max_size=6)):
        cut = draw(st.integers(0, len(raw)))
        pieces.append(draw(st.sampled_from([raw, raw[:cut], raw[cut:], _flip_case(draw, raw)])))
    if draw(st.integers(0, 9)) == 0:
        pieces.insert(draw(st.integers(0, len(pieces))), KNOWN)
    if draw(st.integers(0, 9)) == 0:
        pieces.append(draw(st.text(min_size=1, max_size=4)))
    return "".join(pieces)


@settings(max_examples=examples(300), deadline=None)
@given(text=_texts_around_secrets())
def test_a_text_the_triggers_skip_holds_no_match_of_the_pattern(text: str) -> None:
    """Attack on the pattern pass's prefilter: whenever :class:`Triggers` lets a text skip
    the pass, the compiled pattern (the oracle) finds nothing in it, so skipping changes
    no output; and the redacted text is the pattern's own substitution."""
    for redactor in (KNOWS_ONLY_SHAPES, KNOWS_A_VALUE):
        if not redactor.triggers.could_match(text):
            assert redactor.pattern.search(text) is None, text
        assert redactor.text(text) == redactor.pattern.sub(REDACTED, text)

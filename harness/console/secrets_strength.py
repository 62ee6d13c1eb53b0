"""How much guessing a console token would take, estimated as an attacker would count it.

A token the console generates is 256 random bits (:func:`new_secret`). One the operator
supplies (``$HARNESS_CONSOLE_TOKEN``, ``attach(token=...)``) is refused below
:data:`MIN_TOKEN_BITS`, estimated the way a guesser enumerates candidates, cheapest first:

- a token that repeats a shorter unit (``passwordpassword``, ``abab...``) costs its unit;
- a run of one character, or a run along the alphabet, the digits or a keyboard row
  (``aaaa``, ``abcd``, ``4321``, ``qwerty``) of four or more costs one character;
- each remaining character costs log2 of the character classes the token draws from
  (lowercase 26, uppercase 26, digits 10, ASCII punctuation 33, anything else 100 more).

So ``aaaaaaaaaaaaaaaa`` is worth about 5 bits, ``passwordpassword`` 38, and a random
22-character URL-safe token (``secrets.token_urlsafe(16)``) about 130. It is no dictionary
check: a long phrase of common words passes it; use a generated token.
"""

from __future__ import annotations

import math
import secrets
import string

__all__ = ["MIN_TOKEN_BITS", "SUGGESTION", "estimated_bits", "new_secret"]

MIN_TOKEN_BITS = 128
SUGGESTION = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
SEQUENCES = (
    string.ascii_lowercase,
    string.digits,
    "qwertyuiop",
    "asdfghjkl",
    "zxcvbnm",
    "1234567890",
)
"""Orders a guesser walks (either way): the alphabet, the digits, the keyboard rows."""
RUN = 4
"""A run of this many characters or more costs one character."""


def new_secret() -> str:
    """256 random bits, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def _unit(token: str) -> str:
    """The shortest unit the token repeats (the token itself when it repeats none)."""
    size = len(token)
    for period in range(1, size // 2 + 1):
        if size % period == 0 and token[:period] * (size // period) == token:
            return token[:period]
    for period in range(1, size // 2 + 1):  # a repeat with a partial tail: "abcabcab"
        if all(token[i] == token[i % period] for i in range(size)):
            return token[:period]
    return token


def _steps(a: str, b: str) -> bool:
    """``b`` follows ``a`` in one of :data:`SEQUENCES` (either way), or repeats it."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    for order in SEQUENCES:
        i, j = order.find(a), order.find(b)
        if i >= 0 and j >= 0 and abs(i - j) == 1:
            return True
    return False


def _symbols(unit: str) -> int:
    """Characters a guesser must choose: ``unit`` cut into maximal runs (each character
    follows the one before in a sequence), a run of :data:`RUN` or more counting as one."""
    count, run = 0, 0
    for index, char in enumerate(unit):
        if index and _steps(unit[index - 1], char):
            run += 1
        else:
            count += 1 if run >= RUN else run
            run = 1
    return count + (1 if run >= RUN else run)


def _pool(token: str) -> int:
    pool = 0
    classes = (string.ascii_lowercase, string.ascii_uppercase, string.digits, string.punctuation)
    for chars in classes:
        if any(c in chars for c in token):
            pool += len(chars)
    if any(not c.isascii() or c.isspace() for c in token):
        pool += 100
    return pool


def estimated_bits(token: str) -> float:
    """The guessing cost of ``token`` in bits (see the module docstring)."""
    if not token:
        return 0.0
    unit = _unit(token)
    return _symbols(unit) * math.log2(max(_pool(unit), 2))

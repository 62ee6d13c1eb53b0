"""Redaction of secrets before anything is stored, exported, logged or handed to a caller.

API keys and bearer tokens are recognised by shape; a deployment adds its own patterns
(``run.secret_patterns``) and the values of the API-key environment variables it uses.

One :class:`Redactor` is built per session (``harness.assembly.build.build_redactor``) and
used at every sink: the run store, memory files, MCP server logs, the events a task yields,
reports, exports and CLI output. Text that arrives in pieces (a streamed model answer, a
server's stderr) goes through a :class:`RedactingStream`, which never lets a piece end
inside something that could still become a secret, so a key split across pieces is
redacted exactly as if it had arrived whole.

The patterns are compiled with the ``regex`` module (compatible with ``re`` for every
pattern ``re`` accepts) because it can tell whether the end of a text could be the start
of a match: that is what lets a stream release everything before a possible secret at
once, instead of holding back a fixed window.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, TypeVar

import regex
from pydantic import BaseModel

__all__ = [
    "REDACTED",
    "SECRET_KEY_PATTERN",
    "RedactingStream",
    "Redactor",
    "Triggers",
    "check_pattern",
    "secret_values",
]

REDACTED = "[REDACTED]"

SECRET_KEY_PATTERN = regex.compile(
    r"(?:^|[_\-])(?:api[_\-]?key|key|token|secret|password|passwd|authorization|auth|"
    r"credentials?|cookie)$",
    regex.IGNORECASE,
)
"""Mapping keys whose values are secrets whatever they look like (``Authorization``,
``ROS_TOKEN``, ``api_key``); ``api_key_env`` or ``reserve_tokens`` do not match."""

_BUILTIN_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (pattern, the lower-case strings one of which every match of it contains)
    (r"sk-ant-[A-Za-z0-9_\-]{16,}", ("sk-",)),  # Anthropic keys
    (r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),  # OpenAI keys
    (r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*", ("bearer",)),  # Authorization: Bearer ...
    (
        r"(?i:api[_-]?key|x-api-key|access[_-]?token|secret)[\"']?\s*[:=]\s*[\"']?"
        r"[A-Za-z0-9._\-]{12,}",
        ("api", "access", "secret"),
    ),
    (r"AKIA[0-9A-Z]{16}", ("akia",)),  # AWS access key ids
    (r"gh[pousr]_[A-Za-z0-9]{30,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),  # GitHub tokens
)
"""The secret shapes every redactor knows, each with the literal strings that let
:class:`Triggers` skip the pattern pass on text that holds none of them."""
FRAGMENT_CHARS = 10
"""A known secret value's beginning or end this long or longer is redacted wherever it
appears: that is what a bound (a head-and-tail cut, a note cut at its limit) leaves of a
value it cut, and a fragment is as much a leak as the whole."""

MIN_ENV_SECRET_CHARS = 8
"""An API-key variable's value shorter than this is not treated as a secret (it would
redact ordinary words)."""

STREAM_KEEP_CHARS = 65_536
STREAM_CONTEXT_CHARS = 1_024
"""A stream drops released text beyond this much context (lookbehind of a custom pattern)."""

CACHE_CHARS = 4_000_000
"""Characters of input text :class:`Redactor` keeps with their redacted form. A session
redacts the same strings over and over (its id in every event, a tool output in the event
that carries it and again in each snapshot of the context); a replayed 200-turn session
passed 4.2 million characters through the patterns, 1.5 million of them distinct."""

CACHE_MAX_TEXT_CHARS = 262_144
"""Longer texts are redacted every time and not kept (one would crowd out the rest)."""

M = TypeVar("M", bound=BaseModel)


class _RedactedTexts:
    """The redacted form of recently seen texts, least recently used dropped first once the
    texts kept exceed :data:`CACHE_CHARS` characters. Redaction depends only on the text and
    the redactor's fixed patterns and values, so a kept answer is the answer."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._kept: OrderedDict[str, str] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, text: str) -> str | None:
        with self._lock:
            clean = self._kept.get(text)
            if clean is not None:
                self._kept.move_to_end(text)
            return clean

    def put(self, text: str, clean: str) -> None:
        if len(text) > CACHE_MAX_TEXT_CHARS:
            return
        with self._lock:
            if text in self._kept:
                return
            self._kept[text] = clean
            self._chars += len(text)
            while self._chars > self._budget:
                dropped, _ = self._kept.popitem(last=False)
                self._chars -= len(dropped)

    @property
    def chars(self) -> int:
        """Characters of the texts kept now (at most the budget)."""
        return self._chars


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a secret pattern (it does not compile, or it matches the
    empty string and would redact between every two characters), or None if it can."""
    try:
        compiled = regex.compile(pattern)
    except (regex.error, TypeError) as exc:
        return f"not a regular expression ({exc})"
    if compiled.fullmatch("") is not None:
        return "it matches the empty string"
    return None


def secret_values(value: Any) -> list[str]:
    """Every string under a secret-looking key anywhere in a config tree (an MCP server's
    ``env: {GITHUB_TOKEN: ...}``, a provider's ``headers: {Authorization: ...}``): secrets
    the config holds itself, so the text they appear in is redacted wherever it goes."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and SECRET_KEY_PATTERN.search(key) and isinstance(item, str):
                found.append(item)
            else:
                found.extend(secret_values(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.extend(secret_values(item))
    return found


class _Fragments:
    """What a bound leaves of one known secret value: any :data:`FRAGMENT_CHARS` or more of
    its characters in a row (its beginning before a cut, its end after one). The whole
    value is the main pattern's; this pass runs after it.

    A plain scan rather than a regular expression: every character of such a run lies in
    one of the value's windows of :data:`FRAGMENT_CHARS` characters that occurs in the text,
    so every place a window occurs is redacted, overlapping places as one. A pattern of
    nested optional groups says the same, but compiling it takes time quadratic in the
    value's length (0.14 s for a 108-character key, 0.5 s for 200, at every harness start)."""

    def __init__(self, value: str) -> None:
        count = len(value) - FRAGMENT_CHARS + 1
        self.windows = [value[start : start + FRAGMENT_CHARS] for start in range(count)]

    def sub(self, text: str) -> str:
        spans = sorted(self._runs(text))
        if not spans:
            return text
        pieces, written, open_start, open_end = [], 0, *spans[0]
        for start, end in spans[1:]:
            if start < open_end:  # overlapping runs are one redaction
                open_end = max(open_end, end)
                continue
            pieces += [text[written:open_start], REDACTED]
            written, open_start, open_end = open_end, start, end
        pieces += [text[written:open_start], REDACTED, text[open_end:]]
        return "".join(pieces)

    def _runs(self, text: str) -> Iterable[tuple[int, int]]:
        """(start, end) of every place one of the value's windows occurs in the text."""
        for window in self.windows:
            found = text.find(window)
            while found != -1:
                yield found, found + FRAGMENT_CHARS
                found = text.find(window, found + 1)


class Triggers:
    """Whether a text could hold a match of the redaction pattern at all: the pattern pass
    over a text costs milliseconds (the case-insensitive shapes are tried at every position),
    while these checks are plain substring scans, and most text a session writes (ids,
    names, numbers, tool results) holds none of them.

    Sound by construction, and tested against the pattern itself: a match of a built-in
    shape contains one of its trigger strings, of a known value that value. In ASCII text a
    case-insensitive match is found in the text lowered; other text, and any deployment
    pattern (which might match anything), always get the full pass."""

    def __init__(self, custom_patterns: bool, values: Iterable[str]) -> None:
        self.always = custom_patterns
        self.lowered = tuple(sorted({t for _, found in _BUILTIN_PATTERNS for t in found}))
        self.values = tuple(values)

    def could_match(self, text: str) -> bool:
        if self.always or not text.isascii():
            return True
        lowered = text.lower()
        return any(t in lowered for t in self.lowered) or any(v in text for v in self.values)


class Redactor:
    """Replaces secrets in text (and in nested JSON-like values) with ``[REDACTED]``.

    Args:
        patterns: Regular expressions of the deployment's own secrets (``run.secret_patterns``).
        env_vars: Names of environment variables holding secrets (every ``api_key_env``);
            their values, read now, are redacted wherever they appear.
        literals: Secret values given directly (values under secret-looking config keys).
        cache_chars: Characters of recent texts kept with their redacted form
            (:data:`CACHE_CHARS`; 0 keeps none).
    """

    def __init__(
        self,
        patterns: Iterable[str] = (),
        *,
        env_vars: Iterable[str] = (),
        literals: Iterable[str] = (),
        cache_chars: int = CACHE_CHARS,
    ) -> None:
        patterns = list(patterns)
        sources = [pattern for pattern, _ in _BUILTIN_PATTERNS] + patterns
        values = [os.environ.get(name) or "" for name in env_vars]
        # Longest first: a value containing another must be redacted whole.
        known = [
            value
            for value in sorted({*values, *literals}, key=len, reverse=True)
            if value != REDACTED and len(value) >= MIN_ENV_SECRET_CHARS
        ]
        sources.extend(regex.escape(value) for value in known)
        self._fragments = [_Fragments(value) for value in known if len(value) > FRAGMENT_CHARS]
        self.pattern = regex.compile("|".join(f"(?:{p})" for p in sources))
        self.triggers = Triggers(bool(patterns), known)
        # Every built-in shape and every env value is at least 8 characters long, so
        # shorter strings (most ids and names in an event) need no regex pass; a custom
        # pattern might match anything, so then every string is checked.
        self._min_length = 1 if patterns else MIN_ENV_SECRET_CHARS
        self._seen = _RedactedTexts(cache_chars)

    def text(self, text: str) -> str:
        if len(text) < self._min_length:
            return text
        clean = self._seen.get(text)
        if clean is None:
            clean = self._redact(text)
            self._seen.put(text, clean)
        return clean

    @property
    def cached_chars(self) -> int:
        """Characters of input text kept with their redacted form now."""
        return self._seen.chars

    def _redact(self, text: str) -> str:
        if self.triggers.could_match(text):
            text = self.pattern.sub(REDACTED, text)
        for fragments in self._fragments:
            text = fragments.sub(text)
        return text

    def value(self, value: Any) -> Any:
        """Redact strings anywhere inside dicts, lists and tuples."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(item) for item in value)
        return value

    def model(self, obj: M) -> M:
        """A pydantic object (an event, an item) with every string field redacted; the
        object itself when it holds no secret."""
        data = obj.model_dump()
        clean = self.value(data)
        return obj if clean == data else type(obj).model_validate(clean)

    def config(self, value: Any) -> Any:
        """Like :meth:`value`, and also masks whole values under secret-looking keys.

        Configuration carries secrets in places no pattern recognises: an MCP server's
        ``env`` and ``headers``, provider ``options``. Their keys give them away.
        """
        if isinstance(value, dict):
            return {
                key: REDACTED
                if isinstance(key, str) and SECRET_KEY_PATTERN.search(key) and item
                else self.config(item)
                for key, item in value.items()
            }
        if isinstance(value, (list, tuple)):
            return type(value)(self.config(item) for item in value)
        return self.value(value)

    def stream(self) -> RedactingStream:
        """A redactor for one text that arrives in pieces."""
        return RedactingStream(self)


class RedactingStream:
    """Redacts one text that arrives in pieces, releasing only what is already final.

    :meth:`feed` returns the redacted text that can be released now; :meth:`finish` the
    rest. Joined, the released pieces equal ``redactor.text`` of the joined input. Text is
    held back from the first position where a secret could begin (the end of the text so
    far is a prefix of a possible match, or a match reaches the end and could grow), so a
    secret split across pieces at any offset never leaves in fragments; ordinary prose is
    held back by a few characters at most ("s" could start "sk-...").
    """

    def __init__(self, redactor: Redactor) -> None:
        self._pattern = redactor.pattern
        self._text = ""
        self._decided = 0
        """Characters of ``_text`` already released (redacted)."""
        self.finished = False

    @property
    def held(self) -> int:
        """Characters received but not released yet."""
        return len(self._text) - self._decided

    def feed(self, piece: str) -> str:
        if self.finished:
            raise ValueError("this stream is finished")
        if self._decided > STREAM_KEEP_CHARS:
            # A long stream (a server's stderr over hours) keeps only what a pattern can
            # still look back at, not everything it ever received.
            cut = self._decided - STREAM_CONTEXT_CHARS
            self._text = self._text[cut:]
            self._decided -= cut
        self._text += piece
        return self._release(final=False)

    def finish(self) -> str:
        """The redacted rest; the stream is complete."""
        if self.finished:
            return ""
        rest = self._release(final=True)
        self.finished = True
        return rest

    def _release(self, *, final: bool) -> str:
        text, end = self._text, len(self._text)
        pos = plain = self._decided
        out: list[str] = []
        while pos < end:
            match = self._pattern.match(text, pos, partial=not final)
            if match is None or match.end() == pos:
                pos += 1
                continue
            if not final and (match.partial or match.end() == end):
                break  # a secret may begin here: hold from pos
            out.append(text[plain:pos])
            out.append(REDACTED)
            pos = plain = match.end()
        out.append(text[plain:pos])
        self._decided = pos
        return "".join(out)

"""Who may watch the console, who may act on it, and how the secret reaches the operator.

- **The secret.** Every console has one: generated (256 random bits) unless the operator
  supplies one (``$HARNESS_CONSOLE_TOKEN``, ``attach(token=...)``), which is refused below
  about 128 bits of guessing cost (:mod:`harness.console.secrets_strength`).
- **How it reaches the operator.** The console prints (``harness console``) or hands the
  script (``ui.url``) a link with a **one-time code**. Opening it exchanges the code for a
  browser session: an ``HttpOnly``, ``SameSite=Strict`` cookie holding a fresh random value
  (never the code, never the secret) and a redirect to the bare address, the way Jupyter
  does. The code is then spent; ``?token=`` is read on that exchange only, nowhere else.
  Scripts send the secret itself as ``Authorization: Bearer``.
- **Acting** (start, answer, revise, stop, take over the seat) needs the secret: a browser
  session or the bearer secret, on localhost too. A browser's action must also carry the
  console's own ``Origin`` and be JSON (a page elsewhere cannot send that without the
  browser asking first). Which secret holder may start, answer and revise is the operator
  seat's business (:mod:`harness.console.hub`); Stop is every secret holder's.
- **Watching** without the secret is allowed only when the operator allowed viewers
  (``--viewers``, ``attach(viewers=True)``); such a client never acts. Without that, every
  request without the secret answers 401 and nothing else, not even the page.
- **Loopback names.** On a loopback address a request must name a loopback host, so a page
  elsewhere that points its own name at 127.0.0.1 (DNS rebinding) reads nothing.
- **Guessing.** A wrong link code or bearer secret counts against the client's address;
  after :data:`FREE_FAILURES` of them, each further attempt from there waits a doubling
  backoff (HTTP 429 with ``Retry-After``), logged without the guess. A browser session
  already granted is never throttled (its Stop must always get through).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.console.secrets_strength import (
    MIN_TOKEN_BITS,
    SUGGESTION,
    estimated_bits,
    new_secret,
)
from harness.errors import UsageError

__all__ = [
    "TOKEN_ENV",
    "Access",
    "Grant",
    "Verdict",
    "check_binding",
    "check_token",
    "is_loopback",
]

logger = logging.getLogger(__name__)

TOKEN_ENV = "HARNESS_CONSOLE_TOKEN"
"""The environment variable ``harness console`` reads a supplied token from (a token on
the command line would show in the process list)."""

FREE_FAILURES = 5
"""Wrong codes or secrets from one address before each further attempt waits."""
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 60.0
FAILURE_MEMORY_S = 600.0
"""An address's failures are forgotten this long after its last one."""
ADDRESSES_KEPT = 10_000
"""Addresses whose failures are remembered (the oldest go first beyond that)."""
LINKS_KEPT = 100
"""Unused one-time links kept valid (the oldest expire first beyond that)."""

Role = Literal["holder", "viewer"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str) -> None:
    """Refuse a supplied token an attacker could guess (about 128 bits at least)."""
    bits = estimated_bits(token)
    if bits < MIN_TOKEN_BITS:
        raise UsageError(
            f"the console token is worth about {bits:.0f} bits of guessing; it needs "
            f"{MIN_TOKEN_BITS} (leave {TOKEN_ENV} unset for a generated one, or use {SUGGESTION})"
        )


def check_binding(host: str, token: str | None) -> None:
    """Refuse a supplied token that is too weak (the address itself needs nothing more:
    acting always needs the secret, watching needs it unless viewers were allowed)."""
    if token is not None:
        check_token(token)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class Grant:
    """A browser session made by exchanging a one-time link code."""

    id: str
    """A short public name for it (in the seat, the state and the stop record)."""
    address: str
    created_at: float


@dataclass(frozen=True)
class Verdict:
    """What the gate decided about one request."""

    role: Role | None
    """``holder`` (has the secret), ``viewer`` (watching only), None (refused)."""
    grant: Grant | None = None
    bearer: bool = False
    status: int = 200
    problem: str = ""
    retry_after_s: float = 0.0

    @property
    def actor(self) -> str:
        """Who this is, for the seat and the stop record."""
        if self.grant is not None:
            return f"page {self.grant.id}"
        return "script (bearer)" if self.bearer else "viewer"


@dataclass
class _Failures:
    count: int = 0
    last_at: float = 0.0
    blocked_until: float = 0.0


@dataclass
class Access:
    """The console's access rules for one listening address (see the module docstring)."""

    host: str
    port: int
    token: str | None = None
    """The secret; generated when None."""
    viewers: bool = False
    """Whether clients without the secret may watch (never act)."""
    origins: set[str] = field(default_factory=set)
    clock: Any = time.monotonic

    def __post_init__(self) -> None:
        if self.token is None:
            self.token = new_secret()
        else:
            check_token(self.token)
        if not self.origins:
            self.origins = self.own_origins()
        self._secret = _digest(self.token)
        self._lock = threading.Lock()
        self._codes: dict[bytes, None] = {}  # insertion order: the oldest expire first
        self._grants: dict[bytes, Grant] = {}
        self._failures: dict[str, _Failures] = {}
        self._grant_ids = 0

    # ------------------------------------------------------------------ addresses

    def own_origins(self) -> set[str]:
        """The origins the console's page is served from (what its requests carry)."""
        hosts = {self.host}
        if is_loopback(self.host):
            hosts |= {"127.0.0.1", "localhost", "[::1]"}
        shown = {f"[{h}]" if ":" in h and not h.startswith("[") else h for h in hosts}
        return {f"http://{h}:{self.port}" for h in shown}

    def own_hosts(self) -> set[str]:
        """``Host`` values of a request made to the page's own origins."""
        return {origin.removeprefix("http://") for origin in self.own_origins()}

    @property
    def address(self) -> str:
        """The bare page address (no secret in it)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}/"

    @property
    def cookie(self) -> str:
        """The session cookie's name: one per port (cookies ignore ports, consoles don't)."""
        return f"harness_console_{self.port}"

    # ------------------------------------------------------------------ the secret's ways in

    def new_link(self) -> str:
        """A one-time link: opening it once gives a browser a session, then it is spent."""
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._codes[_digest(code)] = None
            while len(self._codes) > LINKS_KEPT:
                del self._codes[next(iter(self._codes))]
        return f"{self.address}?token={code}"

    def unused_links(self) -> int:
        """Links handed out and not yet opened."""
        with self._lock:
            return len(self._codes)

    def exchange(self, code: str, address: str) -> tuple[str, Grant] | Verdict:
        """Spend a one-time ``code`` for a browser session: (cookie value, grant), or the
        refusal (wrong code: 401, too many: 429)."""
        with self._lock:
            throttled = self._throttled(address)
            if throttled is not None:
                return throttled
            digest = _digest(code)
            if digest not in self._codes:
                return self._failed(address, "link code", "this link is not valid (any more)")
            del self._codes[digest]
            self._failures.pop(address, None)
            self._grant_ids += 1
            grant = Grant(id=f"g{self._grant_ids}", address=address, created_at=time.time())
            value = secrets.token_urlsafe(32)
            self._grants[_digest(value)] = grant
        logger.info("console: link exchanged for browser session %s from %s", grant.id, address)
        return value, grant

    def judge(self, headers: Any, cookies: Any, address: str) -> Verdict:
        """Who a request is: a secret holder (browser session or bearer), a viewer, or
        refused with a status and the reason the client is shown."""
        if is_loopback(self.host) and headers.get("host") not in self.own_hosts():
            return Verdict(
                None,
                status=401,
                problem="this console answers only requests to its own loopback address",
            )
        session = cookies.get(self.cookie)
        if session:
            grant = self._grants.get(_digest(session))
            if grant is not None:
                return Verdict("holder", grant=grant)
        bearer = headers.get("authorization", "")
        if bearer[:7].lower() == "bearer ":
            with self._lock:
                throttled = self._throttled(address)
                if throttled is not None:
                    return throttled
                if hmac.compare_digest(_digest(bearer[7:].strip()), self._secret):
                    self._failures.pop(address, None)
                    return Verdict("holder", bearer=True)
                return self._failed(address, "bearer secret", "wrong console secret")
        if self.viewers:
            return Verdict("viewer")
        return Verdict(
            None,
            status=401,
            problem="this console needs its secret: open the link it printed (each link "
            "works once; ask the console for another)",
        )

    def action_problem(self, verdict: Verdict, headers: Any) -> str | None:
        """Why a state-changing request is refused before its content is read (None: it
        may act). A browser session's request must come from the console's own page."""
        if verdict.role != "holder":
            return (
                "watching only: acting needs the console's secret (open the link the "
                "console printed)"
            )
        if verdict.bearer:
            return None
        origin = headers.get("origin")
        if origin is None:
            return "state-changing requests must carry the console's Origin"
        allowed = set(self.origins)
        if headers.get("host"):
            allowed.add(f"http://{headers.get('host')}")
        if origin not in allowed:
            return f"Origin {origin} is not this console's"
        if not headers.get("content-type", "").startswith("application/json"):
            return "state-changing requests are JSON"
        return None

    # ------------------------------------------------------------------ guessing

    def _throttled(self, address: str) -> Verdict | None:
        failures = self._failures.get(address)
        now = self.clock()
        if failures is None:
            return None
        if now - failures.last_at > FAILURE_MEMORY_S:
            del self._failures[address]
            return None
        if now < failures.blocked_until:
            wait = failures.blocked_until - now
            return Verdict(
                None,
                status=429,
                problem=f"too many wrong attempts from {address}: wait {wait:.1f} s",
                retry_after_s=wait,
            )
        return None

    def _failed(self, address: str, kind: str, problem: str) -> Verdict:
        now = self.clock()
        if address not in self._failures and len(self._failures) >= ADDRESSES_KEPT:
            oldest = min(self._failures, key=lambda a: self._failures[a].last_at)
            del self._failures[oldest]
        failures = self._failures.setdefault(address, _Failures())
        failures.count += 1
        failures.last_at = now
        over = failures.count - FREE_FAILURES
        if over >= 0:
            wait = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2**over)
            failures.blocked_until = now + wait
        logger.warning("console: wrong %s from %s (%d in a row)", kind, address, failures.count)
        return Verdict(None, status=401, problem=problem)

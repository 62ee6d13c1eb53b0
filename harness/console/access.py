"""Who may see the console and who may act on it.

- **Where it listens.** A loopback address (127.0.0.1, ::1, localhost) by default. Any
  other address needs a token, or the console refuses to start (:func:`check_binding`).
- **Seeing.** With a token, every request needs it (a cookie set by opening the printed URL
  once, or ``Authorization: Bearer``); without it the answer is 401 and nothing else, not
  even the page. Without a token (loopback only) anyone on this machine may watch, through
  a loopback name only (a request naming another host, as after DNS rebinding, gets 401).
- **Acting.** A state-changing request (start, answer, revise, stop, claim) must also come
  from the console's own page: its ``Origin`` is one of the console's own origins and it is
  sent as JSON (a form or a page elsewhere cannot send it without the browser asking
  first), and it names the page's connection, which must hold the operator seat (see
  :mod:`harness.console.hub`).

Tokens are compared in constant time; the cookie is ``HttpOnly`` and ``SameSite=Strict``.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UsageError

__all__ = [
    "COOKIE",
    "TOKEN_ENV",
    "Access",
    "check_binding",
    "is_loopback",
    "new_token",
]

COOKIE = "harness_console"
TOKEN_ENV = "HARNESS_CONSOLE_TOKEN"
"""The environment variable ``harness console`` reads its token from (a token on the
command line would show in the process list)."""

MIN_TOKEN_CHARS = 16


def new_token() -> str:
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token, or with a guessable one."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UsageError(
            f"the console token is {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))')"
        )
    if not is_loopback(host) and not token:
        raise UsageError(
            f"--host {host} listens beyond this machine: set a token in ${TOKEN_ENV} "
            "(or bind 127.0.0.1)"
        )


@dataclass
class Access:
    """The console's access rules for one listening address."""

    host: str
    port: int
    token: str | None = None
    origins: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        check_binding(self.host, self.token)
        if not self.origins:
            self.origins = self.own_origins()

    def own_origins(self) -> set[str]:
        """The origins the console's page is served from (what its requests carry)."""
        hosts = {self.host}
        if is_loopback(self.host):
            hosts |= {"127.0.0.1", "localhost", "[::1]"}
        shown = {f"[{h}]" if ":" in h and not h.startswith("[") else h for h in hosts}
        return {f"http://{h}:{self.port}" for h in shown}

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        base = f"http://{host}:{self.port}/"
        return f"{base}?token={self.token}" if self.token else base

    def token_matches(self, given: str | None) -> bool:
        if self.token is None:
            return True
        if given is None:
            return False
        # Any text (headers can carry lone surrogates) compares; only the token matches.
        return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), self.token.encode())

    def own_hosts(self) -> set[str]:
        """``Host`` values of a request made to the page's own origins."""
        return {origin.removeprefix("http://") for origin in self.own_origins()}

    def view_problem(self, headers: Any, cookies: Any, query: Any) -> str | None:
        """Why a request may not see anything (None: it may).

        With a token: the token. Without one (loopback only): the request must name a
        loopback host, so a page elsewhere that points its own name at 127.0.0.1 (DNS
        rebinding) reads nothing."""
        if self.token is None:
            if headers.get("host") not in self.own_hosts():
                return "this console answers only requests to its own loopback address"
            return None
        bearer = headers.get("authorization", "")
        if bearer.lower().startswith("bearer ") and self.token_matches(bearer[7:].strip()):
            return None
        if self.token_matches(cookies.get(COOKIE)) or self.token_matches(query.get("token")):
            return None
        return "this console needs its token (open the URL it printed)"

    def may_view(self, headers: Any, cookies: Any, query: Any) -> bool:
        return self.view_problem(headers, cookies, query) is None

    def action_problem(self, headers: Any) -> str | None:
        """Why a state-changing request is refused before its content is read (None: it
        came from the console's page).

        Its ``Origin`` must be one of the console's own; with a token (which the request
        has already shown) the origin the page was reached by, its ``Host``, counts too,
        for a console on 0.0.0.0 reached by any of the machine's names."""
        origin = headers.get("origin")
        if origin is None:
            return "state-changing requests must carry the console's Origin"
        allowed = set(self.origins)
        if self.token is not None and headers.get("host"):
            allowed.add(f"http://{headers.get('host')}")
        if origin not in allowed:
            return f"Origin {origin} is not this console's"
        if not headers.get("content-type", "").startswith("application/json"):
            return "state-changing requests are JSON"
        return None

"""One TLS context for every provider client of a process, built the way the SDK builds it.

Each SDK client builds its own ``ssl.SSLContext`` and loads the system's certificate
bundle into it: about 26 ms of CPU per client, at every Harness start, every sub-agent's
provider and every probe. Certificates do not change between two clients, so the context
is built once, by the SDK's own httpx (``create_ssl_context()``, which honours
``SSL_CERT_FILE`` and ``SSL_CERT_DIR``), and handed to every client after. It is built
again when either variable changes. An ``SSLContext`` is safe to share between clients and
threads. One thing is written to it after it is built: httpcore sets its ALPN list at
every connection, from the client's ``http2`` setting. The only clients given the shared
context are the providers' (:func:`~harness.providers.inflight.abortable_http_client`),
all HTTP/1.1, so every connection writes the same list; a client that wants HTTP/2 must
not be given it.
"""

from __future__ import annotations

import functools
import importlib
import os
import ssl
from typing import Any

__all__ = ["shared_tls_context"]


def shared_tls_context(client_class: type) -> ssl.SSLContext | None:
    """The context the SDK's httpx would build for ``client_class`` (a subclass of its
    ``Client``), built once per httpx module and certificate setting; None when that httpx
    has no ``create_ssl_context`` (the client then builds its own, as before)."""
    module = _httpx_module(client_class)
    if module is None:
        return None
    return _context(
        module.__name__, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    )


def _httpx_module(client_class: type) -> Any | None:
    for base in client_class.__mro__:
        package = base.__module__.partition(".")[0]
        if package.startswith("httpx"):
            module = importlib.import_module(package)
            return module if callable(getattr(module, "create_ssl_context", None)) else None
    return None


@functools.lru_cache(maxsize=8)
def _context(module_name: str, cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """Keyed by the variables the SDK reads, so a changed setting gets its own context."""
    return importlib.import_module(module_name).create_ssl_context()  # type: ignore[no-any-return]

"""Providers over HTTPS, with the one TLS context a process shares (harness/providers/tls.py).

The server is the wire-format server behind TLS, with a self-signed certificate for
127.0.0.1 that only ``SSL_CERT_FILE`` makes trusted (tests/fixtures/tls, valid to 2126).
The oracle is the handshake itself: the system's certificates refuse the server, the
test certificate admits it, so a context kept across a change of ``SSL_CERT_FILE`` shows
as a call that succeeds or fails when it should not.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ModelError
from harness.messages import InstructionItem, ModelRequest, SystemBlock
from harness.providers import build_model
from harness.providers.tls import shared_tls_context
from tests.dialects import DIALECTS, Dialect, drain
from tests.wire_server import WireServer

TLS = Path(__file__).parents[1] / "fixtures" / "tls"
REQUEST = ModelRequest(
    system=[SystemBlock(name="system", text="You drive a robot.")],
    items=[InstructionItem(text="say hello")],
)


def _serving_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS / "loopback.pem", TLS / "loopback.key")
    return context


@pytest.fixture()
def https() -> Any:
    with WireServer(tls=_serving_context()) as server:
        yield server


def _ask(dialect: Dialect, server: WireServer) -> str:
    server.reply(dialect.text("hello over TLS"))
    _, response = drain(build_model(dialect.config(server, max_retries=0)).stream(REQUEST))
    return response.text


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_https_follows_ssl_cert_file_as_it_changes(
    dialect: Dialect, https: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dialect.prepare(monkeypatch)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ModelError, match="CERTIFICATE_VERIFY_FAILED"):
        _ask(dialect, https)  # the system's certificates do not know the test's
    monkeypatch.setenv("SSL_CERT_FILE", str(TLS / "loopback.pem"))
    assert _ask(dialect, https) == "hello over TLS"
    assert _ask(dialect, https) == "hello over TLS"  # and again, from the kept context
    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(ModelError, match="CERTIFICATE_VERIFY_FAILED"):
        _ask(dialect, https)  # not the context that trusted it


def test_the_context_is_built_once_per_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(TLS / "loopback.pem"))
    first = shared_tls_context(openai.DefaultHttpxClient)
    assert first is not None and first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    assert shared_tls_context(openai.DefaultHttpxClient) is first
    if anthropic.DefaultHttpxClient.__mro__[1] is openai.DefaultHttpxClient.__mro__[1]:
        assert shared_tls_context(anthropic.DefaultHttpxClient) is first  # the same httpx
    monkeypatch.delenv("SSL_CERT_FILE")
    assert shared_tls_context(openai.DefaultHttpxClient) is not first
    assert shared_tls_context(object) is None  # not an httpx client: the SDK builds its own

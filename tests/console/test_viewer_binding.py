"""Live viewers listen on this machine only unless told otherwise.

Found in the third attack round: ``--rerun web`` bound the Rerun web viewer's HTTP port and
its gRPC port to every interface (0.0.0.0), so camera frames and events were reachable from
other hosts. The oracle reads the kernel's own table of listening sockets
(``/proc/net/tcp`` and ``tcp6``), not anything the viewer code reports.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import socket
import sys
from pathlib import Path

import pytest

from harness.export.live import FoxgloveLive, RerunLive, open_live

# Found, not imported: the viewers' SDKs are loaded by the tests that start them, so the
# worker that collects this file without running it does not import Rerun and its Arrow.
pytestmark = [
    pytest.mark.skipif(
        any(importlib.util.find_spec(name) is None for name in ("rerun", "foxglove")),
        reason="needs the [viz] extra (rerun-sdk, foxglove-sdk)",
    ),
    pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp"),
]

LISTEN = "0A"


def listening_addresses(port: int) -> set[str]:
    """Every local address a socket listens on at ``port``, from the kernel's tables."""
    found: set[str] = set()
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state != LISTEN:
                continue
            address_hex, port_hex = local.split(":")
            if int(port_hex, 16) != port:
                continue
            raw = bytes.fromhex(address_hex)
            # The kernel prints each 32-bit word in host (little-endian) order.
            words = [raw[i : i + 4][::-1] for i in range(0, size, 4)]
            found.add(str(ipaddress.ip_address(b"".join(words))))
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _only_loopback(addresses: set[str]) -> bool:
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux socket tables")
def test_the_rerun_web_viewer_listens_on_loopback_only() -> None:
    web, grpc = _free_port(), _free_port()
    live = RerunLive(("web", web, grpc), recording_id="binding-test")
    try:
        web_addresses, grpc_addresses = listening_addresses(web), listening_addresses(grpc)
    finally:
        live.close()
    assert _only_loopback(web_addresses), f"web viewer listens on {web_addresses}"
    assert _only_loopback(grpc_addresses), f"gRPC server listens on {grpc_addresses}"
    assert live.url.startswith(f"http://127.0.0.1:{web}/?url=")
    assert not listening_addresses(web) and not listening_addresses(grpc), "left running"


def test_the_foxglove_server_listens_on_loopback_only() -> None:
    fox = FoxgloveLive(port=0, cameras=[])
    try:
        addresses = listening_addresses(fox.port)
    finally:
        fox.close()
    assert _only_loopback(addresses), addresses


def test_a_wider_address_is_an_explicit_option_with_a_warning(caplog) -> None:
    class _Bare:
        session_id = "wide"
        store = None
        session = None

    notices: list[str] = []
    web, grpc = _free_port(), _free_port()
    with caplog.at_level("WARNING"):
        sink = open_live(_Bare(), rerun=("web", web, grpc), host="0.0.0.0", notice=notices.append)
    try:
        addresses = listening_addresses(web)
    finally:
        assert sink is not None
        sink.close()
    assert addresses == {"0.0.0.0"}
    warned = " ".join(notices) + caplog.text
    assert "every interface" in warned and "0.0.0.0" in warned

"""The earlier rounds' attacks on the console, run again on the secret-and-seat console:
DNS rebinding (101 foreign or malformed ``Host`` headers), path traversal (20 paths) and
script injection (9 places text reaches the page or a report, in Chromium).

Every attack is counted; the oracle is what came back (a status, the bytes served, what
the page's script did), never what the console says about itself. The counts go to the
closing note of issue #41; cross-site requests are in test_console_http.py (every
credential x origin x content type) and test_console_browser.py (pages of another server).
"""

from __future__ import annotations

import http.client as http_client
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.config import HarnessConfig
from harness.console import attach
from harness.messages import ModelRequest, ModelResponse, ToolCall, ToolResultItem, new_id
from harness.providers.scripted import ScriptedModel
from harness.runtime.harness import Harness
from harness.store.writer import SQLiteRunStore
from harness.tools import tool
from tests.console_support import (
    Scenario,
    TaskLoop,
    browser_session,
    http,
    wait_a_moment,
    wait_for,
)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("console-attacks")
    harness = Harness(
        model=ScriptedModel(responder=Scenario()),
        tools=[tool(wait_a_moment)],
        store=SQLiteRunStore(folder / "store"),
    )
    with attach(harness) as ui, TaskLoop(harness, ui) as loop:
        yield harness, ui, loop
    harness.close()


def _raw(
    port: int, method: str, path: str, host: str, headers: dict[str, str]
) -> tuple[int, bytes]:
    """One request with exactly this ``Host`` header (the standard client would add its own)."""
    conn = http_client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host)
        for name, value in headers.items():
            conn.putheader(name, value)
        body = b'{"client": "rebind"}' if method == "POST" else b""
        if body:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def rebinding_hosts(port: int) -> list[str]:
    """101 ``Host`` values a rebinding page (or a confused client) could send: foreign
    names with and without the port, other loopback spellings, malformed ones."""
    names = [
        "evil.example",
        "attacker.test",
        "127.0.0.1.nip.io",
        "localhost.evil.example",
        "evil-localhost",
        "127.0.0.2",
        "127.1",
        "2130706433",
        "0x7f000001",
        "017700000001",
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
        "[0:0:0:0:0:0:0:1]",
        "LOCALHOST",
        "localhost.",
        "127.0.0.1.",
        "a@127.0.0.1",
        "192.168.1.20",
        "10.0.0.1",
        "example.com",
    ]
    hosts = [f"{name}:{port}" for name in names] + names
    hosts += [
        "",
        " ",
        f"127.0.0.1:{port + 1}",
        f"localhost:{port + 1}",
        f"127.0.0.1:{port}.",  # (padding with spaces is no attack: HTTP strips it)
        f"[::1]:{port}x",
        f"127.0.0.1:{port}@evil.example",
        f"127.0.0.1:{port}/",
        f"127.0.0.1:{port}:{port}",
        f"127.0.0.1:0{port}",
        f"127.0.0.1:+{port}",
        "127.0.0.1:",
        ":" + str(port),
        "%31%32%37.0.0.1:" + str(port),
        "127.0.0.1%00:" + str(port),
        f"localhost:{port},evil.example",
        f"evil.example, 127.0.0.1:{port}",
        f"127.0.0.1\t:{port}",
        "x" * 300,
        f"{'a' * 63}.example:{port}",
    ]
    hosts += [f"rebind{n}.attacker.test:{port}" for n in range(101 - len(hosts))]
    assert len(hosts) == len(set(hosts)) == 101
    return hosts


def test_dns_rebinding_reads_and_stops_nothing(console) -> None:
    harness, ui, _ = console
    port = ui.access.port
    session = browser_session(ui)
    ui.hub.task_began("task_rebind")
    served = 0
    tries = 0
    try:
        for host in rebinding_hosts(port):
            for method, path, headers in (
                ("GET", "/api/state", {}),
                ("GET", "/", session),
                ("GET", f"/api/sessions/{harness.session_id}/context", session),
                (
                    "POST",
                    "/api/stop",
                    {
                        **session,
                        "Origin": f"http://{host.strip()}",
                        "Content-Type": "application/json",
                    },
                ),
            ):
                status, body = _raw(port, method, path, host, headers)
                tries += 1
                if status == 200 or b"task_rebind" in body or b"harness console" in body:
                    served += 1
        assert not ui.hub.stop_requested()
    finally:
        ui.hub.task_ended("task_rebind")
    assert tries == 404 and served == 0
    # The control: the same requests with the console's own Host are served.
    assert _raw(port, "GET", "/api/state", f"127.0.0.1:{port}", session)[0] == 200


TRAVERSALS = [
    "/static/../../etc/passwd",
    "/static/%2e%2e/%2e%2e/etc/passwd",
    "/static/..%2f..%2fpyproject.toml",
    "/static/%2F..%2F..%2Fconsole%2Fapp.py",
    "/static/index.html",
    "/static/console.js%00.html",
    "/static//etc/passwd",
    "/static/console.css/../../../store/runs.db",
    "/runs/../../etc/passwd/report",
    "/runs/..%2F..%2Fetc%2Fpasswd/report",
    "/runs/%2e%2e%2fruns.db/report",
    "/api/runs/..%2f..%2fstore%2fruns.db",
    "/api/runs/%2E%2E",
    "/api/runs/task_%25",
    "/api/runs/'%20OR%20'1'='1",
    "/api/frame/-1",
    "/api/frame/99999999999999999999",
    "/api/sessions/..%2F..%2Fstore/context",
    "/api/sessions/%2e%2e/context?task=..%2f..%2fetc%2fpasswd",
    "//etc/passwd",
]
LEAKS = (b"root:", b"[project]", b"SQLite format", b"import ", b"def ", b"CREATE TABLE")


def test_path_traversal_leaves_nothing(console) -> None:
    _, ui, _ = console
    base = ui.address.rstrip("/")
    session = browser_session(ui)
    leaked = []
    for path in TRAVERSALS:
        status, _, body = http(base + path, headers=session)
        if status == 200 or any(mark in body for mark in LEAKS):
            leaked.append((path, status, body[:80]))
    assert len(TRAVERSALS) == 20 and leaked == []


# ------------------------------------------------------------------ script injection

PAYLOAD = (
    '<img src=x onerror="window.__xss=(window.__xss||0)+1">'
    "<script>window.__xss=(window.__xss||0)+1</script>"
    '<svg onload="window.__xss=(window.__xss||0)+1"></svg>'
)


def _xss_model(request: ModelRequest) -> ModelResponse:
    """Asks a question, runs a tool, answers: each with the payload in it."""
    results = [item for item in request.items if isinstance(item, ToolResultItem)]
    if request.purpose == "summarize":
        return ModelResponse(text=f"summary {PAYLOAD}")
    if not results:
        call = ToolCall(id=new_id("call"), name="query_user", arguments={"question": PAYLOAD})
        return ModelResponse(text=f"asking {PAYLOAD}", tool_calls=[call])
    if len(results) == 1:
        arguments = {"message": PAYLOAD, "level": "warning"}
        call = ToolCall(id=new_id("call"), name="notify_user", arguments=arguments)
        return ModelResponse(text=f"telling {PAYLOAD}", tool_calls=[call])
    if len(results) == 2:
        call = ToolCall(id=new_id("call"), name="echo", arguments={"text": PAYLOAD})
        return ModelResponse(text=f"echoing {PAYLOAD}", tool_calls=[call])
    return ModelResponse(text=f"done {PAYLOAD}")


def echo(text: str) -> str:
    """Say the text back.

    Args:
        text: What to say.
    """
    return f"echo: {text}"


PLACES = [
    "instruction",
    "question",
    "answer",
    "tool result",
    "model text",
    "notification",
    "past runs table",
    "past run timeline",
    "HTML report",
]


def test_script_injection_runs_nowhere(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("needs Chromium (Debian: chromium)")
    harness = Harness(
        HarnessConfig.model_validate({"run": {"query_user_timeout_s": 30}}),
        model=ScriptedModel(responder=_xss_model),
        tools=[tool(echo)],
        store=SQLiteRunStore(tmp_path / "store"),
    )
    executed: list[Any] = []
    try:
        with (
            attach(harness) as ui,
            TaskLoop(harness, ui) as loop,
            sync_api.sync_playwright() as playwright,
        ):
            browser = playwright.chromium.launch(
                executable_path=chromium, args=["--no-sandbox", "--headless"]
            )
            page = browser.new_context().new_page()
            page.on("dialog", lambda dialog: (executed.append(dialog.message), dialog.dismiss()))
            page.goto(ui.url)
            page.wait_for_selector("#role.operator", timeout=15_000)
            page.wait_for_selector("#start:not([disabled])", timeout=15_000)
            page.fill("#instruction", f"inspect {PAYLOAD}")
            page.click("#start")
            page.wait_for_selector("#question:not([hidden])", timeout=15_000)
            page.fill("#answer", PAYLOAD)
            page.click("#answer-send")
            page.wait_for_selector("#timeline > li.ev[data-type=done]", timeout=30_000)
            assert "onerror=" in page.inner_text("#notifications")
            task_id = wait_for(lambda: loop.done and loop.done[-1].task_id)
            page.click("#refresh-runs")
            page.wait_for_selector(f"#runs td:text('{task_id}')", timeout=15_000)
            page.click(f"#runs tr:has(td:text('{task_id}')) button")
            page.wait_for_selector("#past:not([hidden]) li.ev", timeout=15_000)
            shown = page.inner_text("body")
            executed.append(page.evaluate("() => window.__xss || 0"))
            report = browser.new_context()
            report_page = report.new_page()
            report_page.goto(ui.url)
            report_page.goto(f"{ui.address.rstrip('/')}/runs/{task_id}/report")
            report_page.wait_for_selector("h1", timeout=15_000)
            executed.append(report_page.evaluate("() => window.__xss || 0"))
            report_text = report_page.inner_text("body")
            browser.close()
    finally:
        harness.close()
    # The payload is shown as text in each place (so the check is not blind) ...
    assert shown.count("onerror=") >= 5 and "onerror=" in report_text
    events = json.dumps([e.model_dump(mode="json") for e in loop.done])
    assert "onerror" in events
    # ... and ran nowhere.
    assert executed == [0, 0], executed
    assert len(PLACES) == 9

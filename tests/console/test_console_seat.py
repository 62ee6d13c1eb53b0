"""The console's seat, its secret and its Stop, attacked over real HTTP (uvicorn on a
loopback port, the standard library as the attacker's client).

Found in the third attack round (each test below failed before the change):

1. another local user's process opened ``/api/stream?client=x``, got ``role: operator``,
   started a task and sent revisions; the operator's page came second and its Stop
   answered 403 "read-only viewer" (3 of 3 tries);
2. the seat was lost on a reconnect: polling ``/api/state`` and connecting when
   ``operator_connected`` turned false took it 0.00-0.03 s after the operator's stream
   closed (3 of 3);
3. tokens: ``aaaaaaaaaaaaaaaa`` and ``passwordpassword`` were accepted, 400 wrong guesses
   in 0.6 s were not throttled, ``?token=`` worked on every route.

The attacker here knows everything but the secret: the routes, the page's connection ids,
the moment the operator's stream closes.
"""

from __future__ import annotations

import http.client as http_client
import json
import logging
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.config import HarnessConfig
from harness.console import attach
from harness.console.access import FIRST_BACKOFF_S, FREE_FAILURES, Access, check_token
from harness.console.secrets_strength import MIN_TOKEN_BITS, estimated_bits
from harness.errors import UsageError
from harness.providers.scripted import ScriptedModel
from harness.runtime.harness import Harness
from harness.store import STORE_FILENAME
from harness.store.writer import SQLiteRunStore
from harness.tools import tool
from tests.console_support import Scenario, TaskLoop, http, wait_a_moment, wait_for
from tests.tiers import examples


def _harness(store: Path) -> Harness:
    return Harness(
        HarnessConfig.model_validate({"run": {"query_user_timeout_s": 20}}),
        model=ScriptedModel(responder=Scenario()),
        tools=[tool(wait_a_moment)],
        store=SQLiteRunStore(store),
    )


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("console-seat")
    harness = _harness(folder / "store")
    with attach(harness) as ui, TaskLoop(harness, ui) as loop:
        yield harness, ui, loop
    harness.close()


def _base(ui: Any) -> str:
    return ui.address.rstrip("/")


def exchange(link: str) -> tuple[int, dict[str, str]]:
    """Open a link without following its redirect: (status, headers)."""
    parts = urlsplit(link)
    conn = http_client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", f"{parts.path}?{parts.query}")
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def browser_session(ui: Any) -> dict[str, str]:
    """What a browser that opened the operator's link sends: its session cookie."""
    status, headers = exchange(ui.url)
    assert status == 303, (status, headers)
    cookie = headers["set-cookie"].split(";", 1)[0]
    return {"Cookie": cookie}


def act(ui: Any, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    base = _base(ui)
    status, _, data = http(
        f"{base}{path}",
        method="POST",
        body=body,
        headers={"Content-Type": "application/json", "Origin": base, **headers},
    )
    try:
        return status, json.loads(data or b"{}")
    except ValueError:
        return status, {"error": data.decode(errors="replace")}


def _role(ui: Any, client: str, headers: dict[str, str]) -> str:
    url = f"{_base(ui)}/api/stream?client={client}"
    status, _, _ = http(f"{_base(ui)}/api/state", headers=headers)
    if status != 200:
        return f"refused {status}"
    import urllib.request

    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data: "):
                return json.loads(line[6:])["role"]
    raise AssertionError("no hello")


# ------------------------------------------------------------------ finding 1


def test_a_process_without_the_secret_never_takes_the_seat_or_acts(console) -> None:
    _, ui, loop = console
    base = _base(ui)
    # The attacker comes first, as in the finding: stream, start, revise, stop.
    status, _, body = http(f"{base}/api/stream?client=x")
    assert status == 401 and b"role" not in body
    for path, payload in (
        ("/api/start", {"client": "x", "instruction": "[revise] attacker's task"}),
        ("/api/revise", {"client": "x", "text": "drive into the wall"}),
        ("/api/claim", {"client": "x"}),
        ("/api/stop", {"client": "x"}),
    ):
        status, _ = act(ui, path, payload, {})
        assert status == 401, path
    assert ui.hub.state()["seat"] is None and ui.hub.task_id is None
    # The operator's browser opens its link second, and holds the seat.
    operator = browser_session(ui)
    assert _role(ui, "op-page", operator) == "operator"
    wait_for(lambda: ui.hub.state()["accepts_tasks"])
    status, body = act(ui, "/api/start", {"instruction": "[revise] wait for word"}, operator)
    assert status == 200, body
    wait_for(lambda: ui.hub.task_id, what="the task to start")
    status, body = act(ui, "/api/stop", {"client": "op-page"}, operator)
    assert status == 200 and body["effect"] == "stopping", body
    wait_for(lambda: loop.done and loop.done[-1].status == "cancelled", timeout=20)


def test_with_viewers_allowed_a_client_without_the_secret_watches_and_never_acts(
    tmp_path: Path,
) -> None:
    harness = _harness(tmp_path / "store")
    with attach(harness, viewers=True) as ui, TaskLoop(harness, ui):
        assert _role(ui, "x", {}) == "viewer"
        ui.hub.task_began("task_v")
        try:
            for path in ("/api/stop", "/api/start", "/api/revise", "/api/claim", "/api/answer"):
                payload = {"client": "x", "instruction": "i", "text": "t", "question_id": 1}
                status, body = act(ui, path, {k: payload[k] for k in _fields(path)}, {})
                assert status == 403 and "watching only" in body["error"], (path, body)
            assert not ui.hub.stop_requested() and ui.hub.state()["seat"] is None
        finally:
            ui.hub.task_ended("task_v")
    harness.close()


def _fields(path: str) -> list[str]:
    return {
        "/api/start": ["client", "instruction"],
        "/api/revise": ["client", "text"],
        "/api/answer": ["client", "question_id", "text"],
    }.get(path, ["client"])


# ------------------------------------------------------------------ finding 2


def test_the_seat_survives_a_reconnect_against_a_poller(console) -> None:
    """The attack of the finding, three times: a poller with the secret (a second browser)
    and one without it watch for the seat's stream to close and connect at once."""
    import urllib.request

    _, ui, _ = console
    base = _base(ui)
    operator = browser_session(ui)
    assert act(ui, "/api/claim", {"take_over": True}, operator)[0] == 200
    other = browser_session(ui)  # a second browser with the secret (not the seat's)
    seat = ui.hub.state()["seat"]
    assert seat is not None
    for attempt in range(3):
        taken: list[str] = []

        def poller(taken: list[str] = taken, attempt: int = attempt) -> None:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                _, _, body = http(f"{base}/api/state", headers=other)
                if not json.loads(body)["operator_connected"]:
                    taken.append(_role(ui, f"poller-{attempt}", other))
                    taken.append(_role(ui, f"stranger-{attempt}", {}))
                    return
                time.sleep(0.002)

        request = urllib.request.Request(f"{base}/api/stream?client=op-{attempt}", headers=operator)
        response = urllib.request.urlopen(request, timeout=10)
        first = next(line for line in response if line.startswith(b"data: "))
        assert json.loads(first[6:])["role"] == "operator"
        wait_for(lambda: ui.hub.state()["operator_connected"])
        thread = threading.Thread(target=poller, daemon=True)
        thread.start()
        response.close()  # a reload, a network blip
        thread.join(20)
        assert taken[0] == "standby" and taken[1].startswith("refused 401"), taken
        assert ui.hub.state()["seat"] == seat
    assert _role(ui, "op-back", operator) == "operator"  # back, with the seat


# ------------------------------------------------------------------ finding 3


@pytest.mark.parametrize(
    "weak",
    [
        "aaaaaaaaaaaaaaaa",
        "passwordpassword",
        "a" * 200,
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "qwertyuiopasdfghjklzxcvbnm1234567890",
        "0123456789" * 8,
        "correcthorse",
        "Tr0ub4dor&3xyz",
    ],
)
def test_a_guessable_token_is_refused(weak: str) -> None:
    assert estimated_bits(weak) < MIN_TOKEN_BITS
    with pytest.raises(UsageError, match="bits"):
        check_token(weak)
    with pytest.raises(UsageError):
        Access(host="127.0.0.1", port=1, token=weak)


@settings(max_examples=examples(500), deadline=None)
@given(unit=st.text(min_size=1, max_size=8), repeats=st.integers(2, 40))
def test_a_repeated_short_unit_is_refused_however_long(unit: str, repeats: int) -> None:
    """A guesser tries the unit, not the length: 8 characters of any kind are < 128 bits."""
    assert estimated_bits(unit * repeats) < MIN_TOKEN_BITS
    with pytest.raises(UsageError):
        check_token(unit * repeats)


def test_generated_and_random_tokens_pass() -> None:
    import secrets

    access = Access(host="127.0.0.1", port=1)
    # a generated secret (256 random bits) passes the check a supplied one must pass; the
    # estimator reads the characters, so it may credit a random draw with fewer than 256
    check_token(access.token)
    assert estimated_bits(access.token) >= MIN_TOKEN_BITS
    passed = sum(estimated_bits(secrets.token_urlsafe(24)) >= MIN_TOKEN_BITS for _ in range(200))
    assert passed == 200


class _StoppedClock:
    """The throttle's clock, standing still unless a test moves it: what the throttle
    answers then depends on the attempts alone, not on how fast a busy machine sends them
    (with the real clock, a loop slower than the backoffs earned a 401 after each)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _guess(base: str, guess: str, by_header: bool) -> tuple[int, dict[str, str]]:
    if by_header:
        status, headers, _ = http(f"{base}/api/state", headers={"Authorization": f"Bearer {guess}"})
        return status, headers
    return exchange(f"{base}/?token={guess}")


def test_wrong_guesses_are_throttled_and_logged_without_the_guess(
    console, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ui, _ = console
    base = _base(ui)
    operator = browser_session(ui)
    clock = _StoppedClock()
    monkeypatch.setattr(ui.access, "clock", clock)
    ui.access._failures.clear()  # what other tests of this module's console got wrong
    statuses: list[int] = []
    retry_after: list[str] = []
    guesses = [f"guess-{n:04d}-Xq7" for n in range(400)]
    try:
        with caplog.at_level(logging.WARNING, logger="harness.console"):
            for n, guess in enumerate(guesses):
                status, headers = _guess(base, guess, by_header=bool(n % 2))
                statuses.append(status)
                if status == 429:
                    retry_after.append(headers.get("Retry-After") or headers.get("retry-after"))
            # While the guesser waits, the operator's browser session still stops a task.
            ui.hub.task_began("task_t")
            try:
                status, body = act(ui, "/api/stop", {}, operator)
                assert status == 200 and body["effect"] == "stopping"
            finally:
                ui.hub.task_ended("task_t")
        # FREE_FAILURES answers 401, then every attempt waits while no time passes.
        assert statuses == [401] * FREE_FAILURES + [429] * (400 - FREE_FAILURES), statuses[:20]
        assert statuses.count(401) <= 8, statuses[:20]
        assert statuses.count(429) >= 390
        assert all(value and int(value) >= 1 for value in retry_after)
        assert "wrong" in caplog.text
        assert not any(guess in caplog.text for guess in guesses)
        # The backoff ends: the limit does not lock the address out for ever; the next
        # wrong guess is answered, and the wait after it is twice as long.
        clock.now += FIRST_BACKOFF_S
        assert _guess(base, "guess-late-Xq7", by_header=True)[0] == 401
        status, headers = _guess(base, "guess-later-Xq7", by_header=True)
        assert status == 429
        assert float(headers.get("Retry-After") or headers["retry-after"]) >= 2 * FIRST_BACKOFF_S
    finally:
        ui.access._failures.clear()


def test_the_token_in_a_url_works_once_and_only_on_the_exchange(console) -> None:
    _, ui, _ = console
    base = _base(ui)
    link = ui.url
    code = link.split("token=", 1)[1]
    for path in ("/api/state", "/api/runs", "/static/console.js", "/api/stream"):
        status, _, _ = http(f"{base}{path}?token={code}")
        assert status == 401, path
        status, _, _ = http(f"{base}{path}?token={ui.secret}")
        assert status == 401, path
    status, headers = exchange(link)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    attributes = {part.strip().lower() for part in cookie.split(";")}
    assert "httponly" in attributes and "samesite=strict" in attributes and "path=/" in attributes
    value = cookie.split(";", 1)[0].split("=", 1)[1]
    assert code not in value and ui.secret not in value
    status, _ = exchange(link)  # spent
    assert status == 401
    status, _ = exchange(f"{base}/?token={ui.secret}")  # the secret is not a link code
    assert status == 401
    ui.access._failures.clear()
    status, _, _ = http(f"{base}/api/state", headers={"Authorization": f"Bearer {ui.secret}"})
    assert status == 200


# ------------------------------------------------------------------ Stop and the seat


def test_stop_is_never_refused_to_a_secret_holder_and_every_stop_is_recorded(console) -> None:
    _, ui, _ = console
    seat_holder, other = browser_session(ui), browser_session(ui)
    assert _role(ui, "seat-page", seat_holder) in ("operator", "standby")
    assert _role(ui, "other-page", other) == "standby"
    before = len(ui.hub.stops)
    status, body = act(ui, "/api/stop", {"client": "other-page"}, other)  # nothing running
    assert status == 200 and body["effect"] == "nothing running"
    ui.hub.task_began("task_s")
    try:
        status, body = act(ui, "/api/stop", {"client": "other-page"}, other)
        assert status == 200 and body["effect"] == "stopping" and ui.hub.stop_requested()
        bearer = {"Authorization": f"Bearer {ui.secret}"}
        status, body = act(ui, "/api/stop", {}, bearer)
        assert status == 200 and body["effect"] == "already stopping"
    finally:
        ui.hub.task_ended("task_s")
    records = ui.hub.stops[before:]
    assert [r.effect for r in records] == ["nothing running", "stopping", "already stopping"]
    assert records[1].by.startswith("page g") and records[1].client == "other-page"
    assert records[1].address == "127.0.0.1" and records[1].task_id == "task_s"
    assert records[2].by == "script (bearer)"
    shown = ui.hub.state()["stops"]
    assert shown[-1]["by"] == "script (bearer)"


def test_handing_the_seat_over_is_an_explicit_action(console) -> None:
    _, ui, _ = console
    first, second = browser_session(ui), browser_session(ui)
    status, _ = act(ui, "/api/claim", {"take_over": True}, first)
    assert status == 200
    assert _role(ui, "second-page", second) == "standby"
    status, body = act(ui, "/api/claim", {}, second)
    assert status == 409 and "take it over" in body["error"]
    status, body = act(ui, "/api/revise", {"text": "x"}, second)
    assert status == 403 and "seat" in body["error"]
    status, body = act(ui, "/api/claim", {"take_over": True}, second)
    assert status == 200 and body["role"] == "operator"
    assert ui.hub.state()["seat_changes"][-1]["to"] == ui.hub.state()["seat"]
    status, body = act(ui, "/api/revise", {"text": "x"}, first)
    assert status == 403


# ------------------------------------------------------------------ context and damage


def test_the_context_route_serves_every_stored_item_as_harness_context_prints_it(
    console, capsys: pytest.CaptureFixture[str]
) -> None:
    harness, ui, loop = console
    operator = browser_session(ui)
    _role(ui, "ctx-page", operator)
    act(ui, "/api/claim", {"take_over": True}, operator)
    wait_for(lambda: ui.hub.state()["accepts_tasks"])
    before = len(loop.done)
    status, body = act(ui, "/api/start", {"instruction": "[revise] wait"}, operator)
    assert status == 200, body
    wait_for(lambda: ui.hub.task_id)
    act(ui, "/api/revise", {"text": "that will do"}, operator)
    wait_for(lambda: len(loop.done) > before, timeout=20)
    task_id = loop.done[-1].task_id
    base = _base(ui)
    url = f"{base}/api/sessions/{harness.session_id}/context?task={task_id}"
    assert http(url)[0] == 401
    status, _, data = http(url, headers=operator)
    assert status == 200, data
    served = json.loads(data)
    assert served["task_id"] == task_id and served["items"]
    store = Path(harness.store.folder)  # type: ignore[attr-defined]
    assert main(["context", task_id, "--all", "--json", "--store", str(store)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert served["items"] == printed  # the oracle: what `harness context` prints
    assert {"state", "tokens", "original_tokens", "reason", "preview", "in_context"} <= set(
        served["items"][0]
    )
    status, _, data = http(f"{base}/api/sessions/sess_nope/context", headers=operator)
    assert status == 404 and b"sess_nope" in data


def test_a_damaged_store_gives_the_console_a_message_not_a_stack_trace(
    console, tmp_path: Path
) -> None:
    harness, ui, loop = console
    base = _base(ui)
    operator = browser_session(ui)
    task_id = loop.done[-1].task_id
    path = Path(harness.store.folder) / STORE_FILENAME  # type: ignore[attr-defined]
    conn = sqlite3.connect(path)
    seq = conn.execute(
        "SELECT seq FROM events WHERE task_id = ? AND type = 'tool_call'", (task_id,)
    ).fetchone()[0]
    conn.execute("UPDATE events SET data = '{broken' WHERE task_id = ? AND seq = ?", (task_id, seq))
    conn.execute("UPDATE tasks SET evidence = '[1, 2' WHERE id = ?", (task_id,))
    conn.commit()
    conn.close()
    for route in (f"/api/runs/{task_id}", "/api/runs"):
        status, headers, data = http(f"{base}{route}", headers=operator)
        body = json.loads(data)
        assert status == 200 and body["damaged"], (route, body)
        assert any(task_id in line for line in body["damaged"])
        assert int(headers["x-harness-store-damaged"]) == len(body["damaged"])
    events = json.loads(http(f"{base}/api/runs/{task_id}", headers=operator)[2])["events"]
    assert events and all(e["seq"] != seq for e in events)  # the intact ones
    status, _, data = http(f"{base}/runs/{task_id}/report", headers=operator)
    assert status == 200 and b"damaged" in data
    # A file SQLite cannot read at all: a one-line error, never "Internal Server Error".
    copy = tmp_path / "copy"
    shutil.copytree(path.parent, copy)
    for side in copy.glob(f"{STORE_FILENAME}-*"):  # the live store's WAL would mend page 1
        side.unlink()
    broken = copy / STORE_FILENAME
    broken.write_bytes(b"\xa5" * 100 + broken.read_bytes()[100:])
    original, ui_history = ui_history_folder(ui, copy)
    try:
        for route in ("/api/runs", f"/api/runs/{task_id}", f"/runs/{task_id}/report"):
            status, _, data = http(f"{base}{route}", headers=operator)
            assert b"Traceback" not in data and b"Internal Server Error" not in data
            body = json.loads(data)
            assert str(copy) in json.dumps(body), (route, body)
            assert status in (200, 500)
    finally:
        ui_history.folder = original


def ui_history_folder(ui: Any, folder: Path) -> tuple[Any, Any]:
    """Point the console's past-runs reader at ``folder`` (returns what to put back)."""
    history = ui.history
    original = history.folder
    history.folder = folder
    return original, history


def test_a_route_that_fails_answers_one_json_line(
    console, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug behind a route: the client gets one line, the log one traceback, uvicorn
    never "Exception in ASGI application"."""
    _, ui, _ = console
    operator = browser_session(ui)

    def broken() -> None:
        raise RuntimeError("a bug\nover two lines")

    monkeypatch.setattr(ui.history, "tasks", broken)
    with caplog.at_level(logging.ERROR):
        status, headers, data = http(f"{_base(ui)}/api/runs", headers=operator)
        # Logged by the server's thread once the answer is out: wait for the line.
        wait_for(lambda: "console: GET /api/runs failed" in caplog.text)
        assert "Exception in ASGI application" not in caplog.text
    assert status == 500 and headers["content-type"].startswith("application/json")
    assert json.loads(data) == {"error": "the console failed: RuntimeError: a bug over two lines"}

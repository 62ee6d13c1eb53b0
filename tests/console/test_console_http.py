"""The console's web app over real HTTP (uvicorn on a loopback port, the stdlib as client):
the secret's gate, the Origin check, the seat, redaction of everything served, past runs of
its own store only, an eval's progress, and a page that closes mid-task (the attacks of
the third round on the seat, the secret and Stop are in test_console_seat.py).

One Harness and one attached console per module (a scripted model, a SQLite store); the
tests that need a console bound beyond localhost attach a second one to their own Harness.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.config import HarnessConfig
from harness.console import attach
from harness.console.access import Access, check_binding
from harness.errors import UsageError
from harness.fleet.episode import EpisodeRecord
from harness.fleet.journal import EvalFolder, Manifest
from harness.providers.scripted import ScriptedModel
from harness.runtime.harness import Harness
from harness.store.writer import SQLiteRunStore
from harness.tools import tool
from tests.console_support import (
    Scenario,
    TaskLoop,
    browser_session,
    http,
    post_action,
    sse,
    wait_a_moment,
    wait_for,
)
from tests.tiers import examples

_rng = random.Random(28)
SECRET = "sk-proj-" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(48))
TOKEN = "console-token-" + "".join(_rng.choice(string.ascii_letters) for _ in range(20))


def _windows(secret: str, size: int = 10) -> list[bytes]:
    """Every ``size``-character window of ``secret``: any leak of 10 or more characters
    contains one (the oracle knows nothing of the redactor)."""
    return [secret[i : i + size].encode() for i in range(len(secret) - size + 1)]


def leaks(data: bytes) -> list[bytes]:
    return [w for w in _windows(SECRET) if w in data]


@tool
def read_badge() -> str:
    """Read the operator badge (it holds a key)."""
    return f"badge says {SECRET}"


def _harness(store: Path) -> Harness:
    scenario = Scenario()
    return Harness(
        HarnessConfig.model_validate({"run": {"query_user_timeout_s": 20}}),
        model=ScriptedModel(responder=scenario),
        tools=[tool(wait_a_moment), read_badge],
        store=SQLiteRunStore(store),
    )


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("console-http")
    harness = _harness(folder / "store")
    with attach(harness) as ui, TaskLoop(harness, ui) as loop:
        yield harness, ui, loop
    harness.close()


@pytest.fixture(scope="module")
def operator(console) -> dict[str, str]:
    """The operator's browser session, holding the seat."""
    _, ui, _ = console
    session = browser_session(ui)
    status, body = post_action(_base(ui), "/api/claim", {"take_over": True}, **session)
    assert status == 200, body
    return session


def _base(ui) -> str:
    return ui.address.rstrip("/")


def _start(ui, loop, operator: dict[str, str], instruction: str) -> None:
    before = len(loop.done)
    wait_for(lambda: ui.hub.state()["accepts_tasks"], what="the loop to wait for a task")
    status, body = post_action(_base(ui), "/api/start", {"instruction": instruction}, **operator)
    assert status == 200, body
    wait_for(lambda: len(loop.done) > before, timeout=20, what=f"{instruction} to end")


# ------------------------------------------------------------------ binding and the token


def test_any_address_gets_a_secret_and_a_weak_token_is_refused() -> None:
    for host in ("0.0.0.0", "192.168.1.20", "::", "127.0.0.1", "::1", "localhost"):
        check_binding(host, None)  # a generated secret guards acting everywhere
        assert Access(host=host, port=1).token
    with pytest.raises(UsageError, match="bits"):
        check_binding("0.0.0.0", "short")
    with pytest.raises(UsageError, match="bits"):
        check_binding("127.0.0.1", "aaaaaaaaaaaaaaaa")


def test_the_cli_refuses_a_weak_token_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HARNESS_CONSOLE_TOKEN", "passwordpassword")
    assert main(["console", "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "HARNESS_CONSOLE_TOKEN" in err
    assert "passwordpassword" not in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_info:
        main(["console", "--port", "99999"])
    assert exit_info.value.code == 2


@settings(max_examples=examples(2000), deadline=None)
@given(
    guess=st.one_of(
        st.text(max_size=60),
        st.builds(lambda n: TOKEN[:n], st.integers(0, len(TOKEN) - 1)),
        st.builds(
            lambda i, c: TOKEN[:i] + c + TOKEN[i + 1 :],
            st.integers(0, len(TOKEN) - 1),
            st.characters(),
        ),
        st.builds(lambda s: TOKEN + s, st.text(min_size=1, max_size=5)),
    ),
    where=st.sampled_from(["cookie", "query", "bearer"]),
)
def test_only_the_exact_secret_lets_a_request_in(guess: str, where: str) -> None:
    """Only the bearer secret itself (a cookie holds a server-made value, never the
    secret; a query never grants anything outside the link exchange)."""
    access = Access(host="0.0.0.0", port=8765, token=TOKEN)
    headers = {"authorization": f"Bearer {guess}"} if where == "bearer" else {}
    cookies = {access.cookie: guess} if where == "cookie" else {}
    verdict = access.judge(headers, cookies, "203.0.113.9")
    expected = where == "bearer" and guess.strip() == TOKEN
    assert (verdict.role == "holder") == expected
    assert verdict.role != "viewer"


def test_without_the_secret_every_route_answers_401_and_nothing_else(tmp_path: Path) -> None:
    harness = _harness(tmp_path / "store")
    with attach(harness, host="0.0.0.0", token=TOKEN) as ui, TaskLoop(harness, ui) as loop:
        port = ui.access.port
        base = f"http://127.0.0.1:{port}"
        assert ui.address == f"http://127.0.0.1:{port}/" and ui.secret == TOKEN
        # With the secret: the page, and a task started through it.
        auth = {"Authorization": f"Bearer {TOKEN}"}
        status, _, body = http(f"{base}/", headers=auth)
        assert status == 200 and b"harness console" in body
        with sse(f"{base}/api/stream?client=op", timeout=5, headers=auth) as stream:
            hello = next(stream)
        status, body = post_action(base, "/api/start", {"instruction": "plain task"}, **auth)
        assert status == 200, body
        wait_for(lambda: loop.done, timeout=20)
        task_id = loop.done[-1].task_id
        ui.hub.task_began("task_x")  # a task "running", so a stop would be accepted
        paths = [
            "/",
            "/static/console.js",
            "/static/console.css",
            "/api/state",
            "/api/stream?client=intruder",
            "/api/frame/0",
            "/api/runs",
            f"/api/runs/{task_id}",
            f"/runs/{task_id}/report",
            f"/api/sessions/{harness.session_id}/context",
            "/api/eval",
            f"/api/state?token={TOKEN}",
        ]
        cookie = {"Cookie": f"{ui.access.cookie}={TOKEN}"}
        for wrong in ({}, {"Authorization": "Bearer nope"}, cookie):
            for path in paths:
                status, _, body = http(base + path, headers=wrong)
                assert status in (401, 429), (path, wrong)  # 429: the guesses are throttled
                assert b"plain task" not in body and b"harness console" not in body
            for path in ("/api/stop", "/api/start", "/api/claim", "/api/revise", "/api/answer"):
                status, _ = post_action(base, path, {"instruction": "x"}, **wrong)
                assert status in (401, 429), path
        assert not ui.hub.stop_requested()
        later = ui.access.clock
        ui.access.clock = lambda: later() + 3600  # the guesser's backoff has passed
        status, _, body = http(f"{base}/api/runs", headers=auth)
        assert status == 200 and task_id.encode() in body
        ui.hub.task_ended("task_x")
    assert hello[0] == "hello" and hello[1]["role"] == "operator"
    harness.close()


# ------------------------------------------------------------------ actions


def test_actions_need_the_secret_the_console_origin_json_and_the_seat(console, operator) -> None:
    _, ui, _ = console
    base = _base(ui)
    standby = browser_session(ui)
    ui.hub.task_began("task_y")
    try:
        bad = [
            ({"Content-Type": "application/json"}, "Origin"),
            ({"Content-Type": "application/json", "Origin": "http://evil.example"}, "not this"),
            ({"Content-Type": "text/plain", "Origin": base}, "JSON"),
        ]
        for headers, message in bad:
            status, _, body = http(
                f"{base}/api/stop", method="POST", body={}, headers={**operator, **headers}
            )
            assert status == 403 and message in json.loads(body)["error"]
        status, body = post_action(base, "/api/revise", {"text": "from standby"}, **standby)
        assert status == 403 and "operator seat" in body["error"]
        assert not ui.hub.stop_requested()
        status, body = post_action(base, "/api/stop", {"extra": 1}, **operator)
        assert status == 400
        status, body = post_action(base, "/api/stop", {"client": "p"}, **standby)
        assert status == 200 and ui.hub.stop_requested()  # Stop: any holder
    finally:
        ui.hub.task_ended("task_y")


# ------------------------------------------------------------------ redaction


def test_nothing_the_console_serves_carries_the_secret(console, operator) -> None:
    _, ui, loop = console
    base = _base(ui)
    with sse(
        f"{base}/api/stream?client=redaction-op&after=0", timeout=20, headers=operator
    ) as stream:
        assert next(stream)[0] == "hello"
        status, body = post_action(
            base,
            "/api/start",
            {"client": "redaction-op", "instruction": f"[ask] read the badge {SECRET}"},
            **operator,
        )
        assert status == 200, body
        question = wait_for(lambda: ui.hub.state()["question"], timeout=20)
        _, _, state_bytes = http(f"{base}/api/state", headers=operator)
        status, body = post_action(
            base,
            "/api/answer",
            {"client": "redaction-op", "question_id": question["id"], "text": f"use {SECRET}"},
            **operator,
        )
        assert status == 200, body
        seen = []
        for name, data in stream:
            seen.append(json.dumps(data).encode())
            if name == "event" and data["type"] == "done":
                break
    wait_for(lambda: loop.done, timeout=10)
    task_id = loop.done[-1].task_id
    harness = console[0]
    served = [
        state_bytes,
        *seen,
        http(f"{base}/api/state", headers=operator)[2],
        http(f"{base}/api/runs", headers=operator)[2],
        http(f"{base}/api/runs/{task_id}", headers=operator)[2],
        http(f"{base}/runs/{task_id}/report", headers=operator)[2],
        http(f"{base}/api/sessions/{harness.session_id}/context", headers=operator)[2],
    ]
    assert any(b"REDACTED" in part or b"[redacted" in part.lower() for part in served)
    for part in served:
        assert not leaks(part), part[:300]


# ------------------------------------------------------------------ history and eval


def test_past_runs_and_reports_come_from_its_own_store_only(
    console, operator, tmp_path: Path
) -> None:
    _, ui, loop = console
    base = _base(ui)
    _start(ui, loop, operator, "a task for the record")
    task_id = loop.done[-1].task_id
    runs = json.loads(http(f"{base}/api/runs", headers=operator)[2])["tasks"]
    assert task_id in [t["task_id"] for t in runs]
    status, headers, body = http(f"{base}/runs/{task_id}/report", headers=operator)
    assert status == 200 and b"a task for the record" in body
    assert "script-src" not in headers["content-security-policy"]
    # A task of another store, and paths that try to leave this one, are not found.
    other = Harness(model=ScriptedModel(responder=Scenario()), store=SQLiteRunStore(tmp_path / "o"))
    other_task = other.run("elsewhere").task_id
    other.close()
    for path in (
        f"/runs/{other_task}/report",
        f"/api/runs/{other_task}",
        "/runs/..%2F..%2Fetc%2Fpasswd/report",
        "/api/runs/%2E%2E",
        f"/runs/{task_id[:-2]}/report",
        f"/api/sessions/{other.session_id}/context",
        "/api/sessions/..%2F..%2Fetc/context",
    ):
        status, _, body = http(base + path, headers=operator)
        assert status == 404, path
        assert b"elsewhere" not in body
    events = json.loads(http(f"{base}/api/runs/{task_id}", headers=operator)[2])["events"]
    assert events[0]["type"] == "task_started" and events[-1]["type"] == "done"


def _wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval, written out here as the test's own oracle."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_a_running_eval_shows_its_progress(tmp_path: Path) -> None:
    folder = EvalFolder(tmp_path / "eval")
    keys = [f"pick/{i}" for i in range(6)] + [f"stack/{i}" for i in range(4)]
    folder.create(Manifest(suite="tabletop", suite_path="suite.yaml", episodes=keys))
    outcomes = {"pick": [True, True, False, True], "stack": [False, True]}
    for family, results in outcomes.items():
        for i, success in enumerate(results):
            folder.append(
                EpisodeRecord(
                    key=f"{family}/{i}",
                    task=family,
                    family=family,
                    variant="base",
                    seed=i,
                    instruction=f"{family} {SECRET}",
                    status="completed",
                    success=success,
                    outcome="achieved" if success else "not_achieved",
                    outcome_summary=f"cube missed the tray ({SECRET})",
                )
            )
    harness = _harness(tmp_path / "store")
    with attach(harness, eval_folder=folder.folder) as ui:
        status, _, body = http(f"{_base(ui)}/api/eval", headers=browser_session(ui))
    harness.close()
    assert status == 200 and not leaks(body)
    data = json.loads(body)
    assert (data["done"], data["total"], data["finished"]) == (6, 10, False)
    rows = {row["family"]: row for row in data["families"]}
    assert (rows["pick"]["successes"], rows["pick"]["failures"]) == (3, 1)
    assert (rows["stack"]["successes"], rows["stack"]["failures"]) == (1, 1)
    assert rows["overall"]["episodes"] == 6
    for family, (s, n) in {"pick": (3, 4), "stack": (1, 2), "overall": (4, 6)}.items():
        low, high = _wilson(s, n)
        assert rows[family]["low"] == pytest.approx(low, abs=1e-9)
        assert rows[family]["high"] == pytest.approx(high, abs=1e-9)
    assert len(data["recent_failures"]) == 2


# ------------------------------------------------------------------ a page that closes


def test_a_closed_page_neither_stops_nor_stalls_the_run_and_the_terminal_still_cancels(
    tmp_path: Path,
) -> None:
    terminal = {"cancel": False}
    harness = _harness(tmp_path / "store")
    with (
        attach(harness) as ui,
        TaskLoop(harness, ui, terminal_cancel=lambda: terminal["cancel"]) as loop,
    ):
        base = _base(ui)
        page = browser_session(ui)
        with sse(f"{base}/api/stream?client=closing", timeout=5, headers=page) as stream:
            assert next(stream)[1]["role"] == "operator"
            wait_for(lambda: ui.hub.state()["accepts_tasks"])
            status, body = post_action(
                base, "/api/start", {"client": "closing", "instruction": "[revise] wait"}, **page
            )
            assert status == 200, body
            wait_for(lambda: ui.hub.task_id, what="the task to start")
        # The page is gone (its seat waits for it), the task keeps running, its hooks answer.
        wait_for(lambda: not ui.hub.state()["operator_connected"], timeout=5)
        assert ui.hub.state()["seat"] is not None
        calls_then = len(harness.model.requests)  # type: ignore[attr-defined]
        wait_for(lambda: len(harness.model.requests) > calls_then + 3, timeout=10)  # type: ignore[attr-defined]
        assert ui.hub.task_id is not None and not loop.done
        terminal["cancel"] = True
        wait_for(lambda: loop.done, timeout=10, what="the terminal's cancel")
    harness.close()
    assert loop.done[-1].status == "cancelled"


ORIGINS = ["own", None, "http://evil.example", "http://127.0.0.1:1", "null", "own/"]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "",
    "multipart/form-data",
]
CREDENTIALS = ["seat", "standby", "bearer", "none", "stale cookie", "secret"]


def test_a_stop_is_accepted_only_from_a_secret_holder(console, operator) -> None:
    """Every combination of credential, Origin, content type and body (360), against an
    oracle written here rule by rule: a browser session (seat or not) needs the console's
    Origin, JSON and a valid body; the bearer secret needs a valid body; nothing else
    stops anything."""
    _, ui, _ = console
    base = _base(ui)
    hub = ui.hub
    credentials = {
        "seat": operator,
        "standby": browser_session(ui),
        "bearer": {"Authorization": f"Bearer {ui.secret}"},
        "none": {},
        "stale cookie": {"Cookie": f"{ui.access.cookie}=stale-session-value"},
        "secret": {"Cookie": f"{ui.access.cookie}={ui.secret}"},
    }
    tries = wrong = 0
    for who, origin, content_type, valid_json in itertools.product(
        CREDENTIALS, ORIGINS, CONTENT_TYPES, (True, False)
    ):
        hub.task_began("task_fuzz")
        try:
            headers = dict(credentials[who])
            if origin is not None:
                headers["Origin"] = {"own": base, "own/": base + "/"}.get(origin, origin)
            if content_type:
                headers["Content-Type"] = content_type
            body = json.dumps({"client": "fuzz"}).encode() if valid_json else b"{client: seat"
            status, _, _ = http(f"{base}/api/stop", method="POST", body=body, headers=headers)
            browser_ok = (
                who in ("seat", "standby")
                and origin == "own"
                and content_type.startswith("application/json")
            )
            expected = valid_json and (browser_ok or who == "bearer")
            tries += 1
            if (status == 200) != expected or hub.stop_requested() != expected:
                wrong += 1
        finally:
            hub.task_ended("task_fuzz")
    assert (tries, wrong) == (360, 0)


class _LeakyScene:
    """A scene whose Brief names an object after the key (a label read off a box)."""

    def refresh(self, observation, *, focus: str):
        from harness.protocols import SceneRefresh

        return SceneRefresh(brief=f"objects: box labelled {SECRET} on table_1")

    def tools(self) -> list:
        return []

    def on_verdict(self, tool, arguments, verdict) -> None:
        pass


def test_the_brief_is_redacted_like_every_event(tmp_path: Path) -> None:
    harness = Harness(
        model=ScriptedModel(responder=Scenario()),
        scene=_LeakyScene(),
        store=SQLiteRunStore(tmp_path / "store"),
    )
    with attach(harness) as ui:
        harness.run("look at the box")
        _, _, body = http(f"{_base(ui)}/api/state", headers=browser_session(ui))
    harness.close()
    state = json.loads(body)
    assert "box labelled" in state["brief"]
    assert not leaks(body)

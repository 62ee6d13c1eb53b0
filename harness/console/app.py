"""The console's web app: a list of routes and one gate (Starlette).

Reading: ``/`` (the page, plain HTML/JS/CSS shipped in ``static/``), ``/api/stream``
(server-sent events: every hub message in order, then live), ``/api/state``,
``/api/frame/N`` (a camera frame of the request the model is about to get), ``/api/runs``
and ``/api/runs/ID`` (past tasks of the console's own store), ``/runs/ID/report`` (its HTML
report), ``/api/sessions/ID/context`` (every stored item of a session's task at a turn,
as ``harness context --all`` prints it), ``/api/eval`` (a running eval's progress). Acting
(POST, JSON): ``/api/claim``, ``/api/release``, ``/api/start``, ``/api/answer``,
``/api/revise``, ``/api/stop``.

The gate in front of every route applies :class:`~harness.console.access.Access`: it
exchanges a one-time link code for a browser session (``/?token=CODE``, nowhere else),
answers 401 (or 429 while an address is guessing) to a request without the secret unless
viewers are allowed, and hands each route who is asking. An action must come from a
secret holder (and, from a browser, carry the console's Origin and be JSON); the hub keeps
start, answer and revise to the operator seat, and never refuses a holder's Stop.
Refusals and failures are JSON ``{"error": "..."}`` (a damaged run store too: one line
naming the store, the task and what), never a stack trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from harness.console.access import Access, Verdict
from harness.console.history import EvalProgress, RunHistory
from harness.console.hub import ConsoleHub
from harness.console.hub_types import Message, Refused, TaskRequest
from harness.console.live import LiveView
from harness.errors import RunNotFoundError, RunStoreDamagedError, RunStoreError

__all__ = ["build_app"]

logger = logging.getLogger(__name__)

STATIC = resources.files("harness.console") / "static"
KEEPALIVE_S = 1.0
"""How long a viewer's stream waits before a keep-alive (and a disconnect check)."""
PAGE_FILES = {"console.js": "text/javascript", "console.css": "text/css"}
PAGE_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
REPORT_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'"
)


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    client: str = Field("", max_length=100)
    """The page's connection id (recorded with a stop)."""


class _Claim(_Action):
    take_over: bool = False
    """Move the seat from the holder that has it (the explicit hand-over)."""


class _Start(_Action):
    instruction: str = Field(min_length=1, max_length=20_000)
    max_turns: int | None = Field(None, ge=1, le=100_000)


class _Answer(_Action):
    question_id: int
    text: str = Field(max_length=20_000)


class _Revise(_Action):
    text: str = Field(min_length=1, max_length=20_000)


def _address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _refusal(verdict: Verdict) -> Response:
    headers = {}
    if verdict.status == 429:
        headers["retry-after"] = str(max(1, round(verdict.retry_after_s + 0.5)))
    return PlainTextResponse(
        f"{verdict.status}: {verdict.problem}", status_code=verdict.status, headers=headers
    )


class _Gate:
    """Every request passes here: the link exchange, the secret, security headers."""

    def __init__(self, app: ASGIApp, access: Access, hub: ConsoleHub) -> None:
        self.app = app
        self.access = access
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        address = _address(scope)
        verdict = self.access.judge(request.headers, request.cookies, address)
        if verdict.status == 401 and "loopback" in verdict.problem:
            await _refusal(verdict)(scope, receive, send)
            return
        if scope["path"] == "/" and "token" in request.query_params:
            response = self._exchange(request.query_params["token"], address, verdict)
            await self._with_headers(response, scope, receive, send)
            return
        if verdict.role is None:
            await _refusal(verdict)(scope, receive, send)
            return
        scope.setdefault("state", {})["verdict"] = verdict
        await self._with_headers(self.app, scope, receive, send)

    def _exchange(self, code: str, address: str, verdict: Verdict) -> Response:
        """``/?token=CODE``: a one-time code for a browser session, then the bare page."""
        if verdict.grant is not None:  # this browser has a session: the link adds nothing
            return RedirectResponse("/", status_code=303)
        exchanged = self.access.exchange(code, address)
        if isinstance(exchanged, Verdict):
            return _refusal(exchanged)
        value, _grant = exchanged
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(self.access.cookie, value, httponly=True, samesite="strict", path="/")
        return response

    async def _with_headers(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def with_headers(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = message.setdefault("headers", [])
                names = {name.lower() for name, _ in headers}
                extra = {
                    b"x-content-type-options": b"nosniff",
                    b"referrer-policy": b"no-referrer",
                    b"x-frame-options": b"DENY",
                    b"content-security-policy": PAGE_POLICY.encode(),
                    b"cache-control": b"no-store",
                }
                headers.extend((k, v) for k, v in extra.items() if k not in names)
            await send(message)

        try:
            await app(scope, receive, with_headers)
        except Exception as exc:  # answered (one JSON line) and logged here, once
            logger.error("console: %s %s failed", scope.get("method"), scope["path"], exc_info=exc)
            if not started:
                await _failure_response(exc)(scope, receive, with_headers)


def _verdict(request: Request) -> Verdict:
    return request.scope["state"]["verdict"]


def _holder(verdict: Verdict) -> str | None:
    """The seat's name for a secret holder: its browser session, or the bearer script."""
    if verdict.role != "holder":
        return None
    return verdict.grant.id if verdict.grant is not None else "script"


class _EventStream(StreamingResponse):
    """A viewer's stream; its connection ends when the response does, however it ends."""

    def __init__(self, hub: ConsoleHub, client: str, body: AsyncIterator[str]) -> None:
        super().__init__(body, media_type="text/event-stream")
        self.hub = hub
        self.client = client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.hub.disconnect(self.client)


def _sse(message: Message) -> str:
    return f"id: {message.id}\nevent: {message.kind}\ndata: {json.dumps(message.data)}\n\n"


def build_app(
    *,
    hub: ConsoleHub,
    live: LiveView,
    access: Access,
    history: RunHistory,
    evaluation: EvalProgress | None = None,
) -> ASGIApp:
    """The console's ASGI app for one hub (one Harness session)."""

    async def page(request: Request) -> Response:
        return HTMLResponse((STATIC / "index.html").read_text(encoding="utf-8"))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in PAGE_FILES:
            return PlainTextResponse("not found", status_code=404)
        return Response((STATIC / name).read_bytes(), media_type=PAGE_FILES[name])

    async def stream(request: Request) -> Response:
        client = request.query_params.get("client", "")[:100]
        try:
            after = max(0, int(request.query_params.get("after", "0")))
        except ValueError:
            return JSONResponse({"error": "after must be a message id"}, status_code=400)
        verdict = _verdict(request)
        holder = _holder(verdict)
        role = hub.connect(client, holder) if client else hub.role(holder)

        async def body() -> AsyncIterator[str]:
            nonlocal after
            hello = {
                "role": role,
                "who": verdict.actor,
                "state": hub.state(),
                "last_id": hub.last_id(),
            }
            yield f"event: hello\ndata: {json.dumps(hello)}\n\n"
            while True:
                batch = await hub.wait(after, KEEPALIVE_S)
                if not batch:
                    if await request.is_disconnected():
                        return
                    yield ": keep-alive\n\n"
                    continue
                for message in batch:
                    yield _sse(message)
                after = batch[-1].id

        if not client:
            return StreamingResponse(body(), media_type="text/event-stream")
        return _EventStream(hub, client, body())

    async def state(request: Request) -> Response:
        holder = _holder(_verdict(request))
        return JSONResponse({**hub.state(), "role": hub.role(holder)})

    async def frame(request: Request) -> Response:
        image = live.frame(request.path_params["index"])
        if image is None:
            return PlainTextResponse("no such frame", status_code=404)
        return Response(image.data, media_type=image.media_type)

    def runs(request: Request) -> Response:
        tasks, damaged = history.tasks()
        return _read({"folder": str(history.folder or ""), "tasks": tasks}, damaged)

    def run_events(request: Request) -> Response:
        events, damaged = history.events(request.path_params["task_id"])
        return _read({"events": events}, damaged)

    def report(request: Request) -> Response:
        text = history.report(request.path_params["task_id"])
        return HTMLResponse(text, headers={"content-security-policy": REPORT_POLICY})

    def context(request: Request) -> Response:
        query = request.query_params
        try:
            turn = int(query["turn"]) if query.get("turn") else None
        except ValueError:
            return JSONResponse({"error": "turn must be a number"}, status_code=400)
        data, damaged = history.context(
            request.path_params["session_id"], task_id=query.get("task") or None, turn=turn
        )
        return _read(data, damaged)

    def eval_progress(request: Request) -> Response:
        if evaluation is None:
            return JSONResponse({"enabled": False})
        try:
            return JSONResponse({"enabled": True, **evaluation.snapshot()})
        except Exception as exc:  # a half-written folder: say so, keep serving
            return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=500)

    def action(model: type[_Action], act: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            verdict = _verdict(request)
            problem = access.action_problem(verdict, request.headers)
            if problem is not None:
                return JSONResponse({"error": problem}, status_code=403)
            try:
                body = model.model_validate_json(await request.body())
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "body"
                return JSONResponse({"error": f"{where}: {first['msg']}"}, status_code=400)
            try:
                result = act(body, verdict, _address(request.scope))
            except Refused as exc:
                return JSONResponse({"error": str(exc)}, status_code=exc.status)
            return JSONResponse({"ok": True, **(result or {})})

        return endpoint

    def stop(body: _Action, verdict: Verdict, address: str) -> dict[str, Any]:
        record = hub.request_stop(verdict.actor, address=address, client=body.client)
        return {"effect": record.effect, "task_id": record.task_id}

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/api/stream", stream),
        Route("/api/state", state),
        Route("/api/frame/{index:int}", frame),
        Route("/api/runs", runs),
        Route("/api/runs/{task_id}", run_events),
        Route("/runs/{task_id}/report", report),
        Route("/api/sessions/{session_id}/context", context),
        Route("/api/eval", eval_progress),
        Route(
            "/api/claim",
            action(
                _Claim,
                lambda b, v, a: {"role": hub.claim(_holder(v) or "", take_over=b.take_over)},
            ),
            methods=["POST"],
        ),
        Route(
            "/api/release",
            action(_Action, lambda b, v, a: {"role": hub.release(_holder(v) or "")}),
            methods=["POST"],
        ),
        Route(
            "/api/start",
            action(
                _Start,
                lambda b, v, a: hub.start(
                    _holder(v), TaskRequest(instruction=b.instruction, max_turns=b.max_turns)
                ),
            ),
            methods=["POST"],
        ),
        Route(
            "/api/answer",
            action(_Answer, lambda b, v, a: hub.answer(_holder(v), b.question_id, b.text)),
            methods=["POST"],
        ),
        Route(
            "/api/revise",
            action(_Revise, lambda b, v, a: hub.revise(_holder(v), b.text)),
            methods=["POST"],
        ),
        Route("/api/stop", action(_Action, stop), methods=["POST"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub.bind_loop(asyncio.get_running_loop())
        yield

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            RunNotFoundError: _not_found,
            RunStoreError: _store_failed,
            Exception: _failed,
        },
    )
    return _Gate(app, access, hub)


def _read(data: dict[str, Any], damaged: list[str]) -> Response:
    """What was read; the damage met on the way is listed with it (``damaged``: one line
    each) and flagged in a header, so a page shows both."""
    if not damaged:
        return JSONResponse(data)
    return JSONResponse(
        {**data, "damaged": damaged}, headers={"x-harness-store-damaged": str(len(damaged))}
    )


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": str(exc)}, status_code=404)


async def _store_failed(request: Request, exc: Exception) -> Response:
    """A store that cannot be read (damaged, busy, from a newer harness): one line."""
    lines = exc.lines if isinstance(exc, RunStoreDamagedError) else [str(exc)]
    return JSONResponse({"error": lines[0], "damaged": lines}, status_code=500)


async def _failed(request: Request, exc: Exception) -> Response:
    """Anything else: one line to the client (the gate logs it with its traceback)."""
    return _failure_response(exc)


def _failure_response(exc: Exception) -> Response:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return JSONResponse({"error": f"the console failed: {text}"[:300]}, status_code=500)

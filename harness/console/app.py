"""The console's web app: a list of routes and one gate (Starlette).

Reading: ``/`` (the page, plain HTML/JS/CSS shipped in ``static/``), ``/api/stream``
(server-sent events: every hub message in order, then live), ``/api/state``,
``/api/frame/N`` (a camera frame of the request the model is about to get), ``/api/runs``
and ``/api/runs/ID`` (past tasks of the console's own store), ``/runs/ID/report`` (its HTML
report), ``/api/eval`` (a running eval's progress). Acting (POST, JSON): ``/api/claim``,
``/api/start``, ``/api/answer``, ``/api/revise``, ``/api/stop``.

The gate in front of every route applies :class:`~harness.console.access.Access`: without
the token (when there is one) a request gets 401 and nothing else; an action must carry
the console's Origin and be JSON, and the hub refuses it unless its connection holds the
operator seat. Refusals are JSON ``{"error": "..."}`` the page shows as they are.
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

from harness.console.access import COOKIE, Access
from harness.console.history import EvalProgress, RunHistory
from harness.console.hub import ConsoleHub, Message, Refused, TaskRequest
from harness.console.live import LiveView
from harness.errors import RunNotFoundError, RunStoreError

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

    client: str = Field(min_length=1, max_length=100)


class _Start(_Action):
    instruction: str = Field(min_length=1, max_length=20_000)
    max_turns: int | None = Field(None, ge=1, le=100_000)


class _Answer(_Action):
    question_id: int
    text: str = Field(max_length=20_000)


class _Revise(_Action):
    text: str = Field(min_length=1, max_length=20_000)


class _Gate:
    """Every request passes here: the token, security headers, nothing else."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        problem = self.access.view_problem(request.headers, request.cookies, request.query_params)
        if problem is not None:
            response = PlainTextResponse(f"401: {problem}", status_code=401)
            await response(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
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

        await self.app(scope, receive, with_headers)


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
        if "token" in request.query_params:  # opened from the printed URL: keep it in a cookie
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(
                COOKIE, access.token or "", httponly=True, samesite="strict", path="/"
            )
            return response
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
        role = hub.connect(client) if client else "viewer"

        async def body() -> AsyncIterator[str]:
            nonlocal after
            hello = {"role": role, "state": hub.state(), "last_id": hub.last_id()}
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
        return JSONResponse(hub.state())

    async def frame(request: Request) -> Response:
        image = live.frame(request.path_params["index"])
        if image is None:
            return PlainTextResponse("no such frame", status_code=404)
        return Response(image.data, media_type=image.media_type)

    def runs(request: Request) -> Response:
        return JSONResponse({"folder": str(history.folder or ""), "tasks": history.tasks()})

    def run_events(request: Request) -> Response:
        try:
            return JSONResponse({"events": history.events(request.path_params["task_id"])})
        except (RunNotFoundError, RunStoreError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)

    def report(request: Request) -> Response:
        try:
            text = history.report(request.path_params["task_id"])
        except (RunNotFoundError, RunStoreError) as exc:
            return PlainTextResponse(str(exc), status_code=404)
        return HTMLResponse(text, headers={"content-security-policy": REPORT_POLICY})

    def eval_progress(request: Request) -> Response:
        if evaluation is None:
            return JSONResponse({"enabled": False})
        try:
            return JSONResponse({"enabled": True, **evaluation.snapshot()})
        except Exception as exc:  # a half-written folder: say so, keep serving
            return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=500)

    def action(model: type[_Action], act: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            problem = access.action_problem(request.headers)
            if problem is not None:
                return JSONResponse({"error": problem}, status_code=403)
            try:
                body = model.model_validate_json(await request.body())
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "body"
                return JSONResponse({"error": f"{where}: {first['msg']}"}, status_code=400)
            try:
                result = act(body)
            except Refused as exc:
                return JSONResponse({"error": str(exc)}, status_code=exc.status)
            return JSONResponse({"ok": True, **(result or {})})

        return endpoint

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
        Route("/api/eval", eval_progress),
        Route(
            "/api/claim",
            action(_Action, lambda b: {"role": hub.claim(b.client)}),
            methods=["POST"],
        ),
        Route(
            "/api/start",
            action(
                _Start,
                lambda b: hub.start(
                    b.client, TaskRequest(instruction=b.instruction, max_turns=b.max_turns)
                ),
            ),
            methods=["POST"],
        ),
        Route(
            "/api/answer",
            action(_Answer, lambda b: hub.answer(b.client, b.question_id, b.text)),
            methods=["POST"],
        ),
        Route(
            "/api/revise", action(_Revise, lambda b: hub.revise(b.client, b.text)), methods=["POST"]
        ),
        Route("/api/stop", action(_Action, lambda b: hub.request_stop(b.client)), methods=["POST"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub.bind_loop(asyncio.get_running_loop())
        yield

    return _Gate(Starlette(routes=routes, lifespan=lifespan), access)

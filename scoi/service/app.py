"""The FastAPI application of ``scoi serve``: the CLI's library calls over HTTP, and the page.

Every endpoint under ``/api`` runs its work in a worker thread under the request time
limit, answers errors as ``{"error": "..."}`` with the texts the CLI prints (less any URL
or file path: :func:`scoi.service.guard.redact`), and takes only texts and choices among
the server's names (models, templates, methods): never SQL, file paths, templates files or
backend URLs (``extra`` request fields are refused).

The layout is FastAPI's: request bodies in scoi.service.models, dependencies in
scoi.service.deps, one ``APIRouter`` per area in scoi.service.routers, the shared state in
scoi.service.state; this module only assembles them (middleware, error handlers, OpenAPI).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from scoi import __version__
from scoi.service.config import ServeConfig
from scoi.service.deps import authorised
from scoi.service.guard import Guard, redact, send_json
from scoi.service.models import ERROR_RESPONSES
from scoi.service.routers import gaps, info, jobs, lookup, pages, selection, translate
from scoi.service.selectors import warm_all
from scoi.service.state import ApiError, Service, log

#: The answer to a body that is not UTF-8 (raw latin-1 or \xff bytes, a gzip body).
UTF8_ONLY = "the body must be UTF-8 JSON: it holds bytes that are not UTF-8"

#: The routers under /api behind the token check, in the order OpenAPI lists them.
API_ROUTERS = (selection.router, translate.router, info.router, jobs.router, gaps.router, lookup.router)


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` (413), by header or as they stream in."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                too_big = int(length) > self.max_bytes
            except ValueError:
                await send_json(send, 400, {"error": f"bad Content-Length header {length[:40]!r}"})
                return
            if too_big:
                await send_json(send, 413, {"error": self._message()})
                return
        over = False
        seen = 0

        async def limited() -> dict:
            nonlocal over, seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        started = False

        async def guarded_send(message: dict) -> None:
            nonlocal started
            if over and not started:
                started = True
                await send_json(send, 413, {"error": self._message()})
                return
            if over:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, limited, guarded_send)

    def _message(self) -> str:
        return f"request body larger than the server's limit of {self.max_bytes} bytes"


def create_app(config: ServeConfig, *, warm: list[tuple[str, str]] | None = None,
               load_models: bool = True) -> FastAPI:
    """The application for ``config`` (``warm``: directions whose selectors load at start;
    ``load_models``: load the configured models in the background at start)."""
    config.check()
    service = Service(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if load_models and service.models:
            threading.Thread(target=service.load_models, name="load-models", daemon=True).start()
        if warm:
            await anyio.to_thread.run_sync(warm_all, service.selectors, warm, log.warning)
        yield
        await anyio.to_thread.run_sync(service.close)

    app = FastAPI(title="scoi", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="In-context example selection (SCOI) and translation over a PostgreSQL "
                              "translation memory. Errors are JSON: {\"error\": \"...\"} (422: with "
                              "\"details\"); bodies must be sent as Content-Type: application/json.")
    app.state.service = service
    app.add_middleware(BodyLimit, max_bytes=config.limits.max_body_bytes)
    app.add_middleware(Guard, check_host=config.token is None)  # outermost: every answer gets the headers

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        shown = redact(exc.message)
        if shown != exc.message:  # the operator's log keeps what the client does not see
            log.warning("answered %d %s %s: %s", exc.status, request.method, request.url.path, exc.message)
        return JSONResponse({"error": shown}, status_code=exc.status, headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [validation_detail(err) for err in exc.errors()]
        parts = [f"{d['where']}: {d['msg']}" if d["where"] else d["msg"] for d in details]
        for d in details:
            del d["where"]
        return JSONResponse({"error": "; ".join(parts), "details": details}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.__cause__ is not None:
            # FastAPI's "error parsing the body": not UTF-8 (gzip, latin-1), nested too deep.
            msg = (UTF8_ONLY if isinstance(exc.__cause__, UnicodeError)
                   else "the body is not a JSON object: nested too deeply" if isinstance(exc.__cause__, RecursionError)
                   else f"the body is not a JSON object: unreadable ({type(exc.__cause__).__name__})")
            return JSONResponse({"error": msg, "details": [{"loc": ["body"], "msg": msg, "type": "body_invalid"}]},
                                status_code=422)
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    api = APIRouter(prefix="/api", dependencies=[Depends(authorised)], responses=ERROR_RESPONSES)
    for router in API_ROUTERS:
        api.include_router(router)
    app.include_router(api)
    app.include_router(info.health_router, prefix="/api")
    app.mount("/static", StaticFiles(directory=str(pages.STATIC)), name="static")
    app.include_router(pages.router)

    app.openapi = lambda: openapi_with_limits(app, config)  # type: ignore[method-assign]
    return app


def validation_detail(err: dict[str, Any]) -> dict[str, Any]:
    """One pydantic finding as JSON that always encodes: its place, message and type, never
    the input (which may hold NaN, a lone surrogate, or a whole body)."""
    loc = [p if isinstance(p, int) else printable(str(p)) for p in err.get("loc", ())]
    where = ".".join(str(p) for p in loc if p not in ("body",))
    kind = printable(str(err.get("type", "")))
    msg = ("contains a lone surrogate (\\ud800-\\udfff); send valid UTF-8 text" if kind == "string_unicode"
           else printable(str(err.get("msg", ""))))
    return {"loc": loc, "msg": msg, "type": kind, "where": where}


def printable(text: str) -> str:
    """``text`` with lone surrogates shown as \\udXXX escapes (JSON and UTF-8 refuse them)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


#: Request fields the server's limits bound, per body model: (field, schema key, limit attribute).
LIMITED_FIELDS = (("k", "maximum", "max_k"), ("text", "maxLength", "max_chars"),
                  ("sentences", "maxItems", "max_sentences"), ("references", "maxItems", "max_sentences"))


def openapi_with_limits(app: FastAPI, config: ServeConfig) -> dict[str, Any]:
    """FastAPI's OpenAPI document with this server's limits on the request fields (k,
    characters, sentences), which the routes check against the configuration."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        lim = config.limits
        for body in schema.get("components", {}).get("schemas", {}).values():
            props = body.get("properties", {})
            for name, key, attr in LIMITED_FIELDS:
                prop = props.get(name)
                if prop is None:
                    continue
                target = next((a for a in prop.get("anyOf", []) if a.get("type") == "array"), prop)
                target[key] = getattr(lim, attr)
                if name in ("sentences", "references"):
                    target.setdefault("items", {})["maxLength"] = lim.max_chars
        app.openapi_schema = schema
    return app.openapi_schema

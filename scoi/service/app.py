"""The FastAPI application of ``scoi serve``: the CLI's library calls over HTTP, and the page.

Every endpoint under ``/api`` runs its work in a worker thread under the request time
limit, answers errors as ``{"error": "..."}`` with the texts the CLI prints, and takes
only texts and choices among the server's names (models, templates, methods): never SQL,
file paths, templates files or backend URLs (``extra`` request fields are refused).
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from importlib import resources
from typing import Annotated, Any, TypeVar

import anyio
import psycopg
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from scoi import __version__
from scoi.core import defaults
from scoi.db.queries import load
from scoi.service.config import TEMPLATES, TOKEN_ENV, ServeConfig
from scoi.service.selectors import Busy, SelectorPool

log = logging.getLogger("scoi.serve")
SQL = load("serve")
T = TypeVar("T")
STATIC = resources.files("scoi.service").joinpath("static")
Lang = Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}$", description="Language code, e.g. fr")]
Choice = Annotated[str, Field(min_length=1, max_length=40)]


class ApiError(Exception):
    """An answer other than 200: its status and the message the client sees."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


# --------------------------------------------------------------------------- request bodies
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SelectRequest(_Strict):
    text: str = Field(min_length=1, description="The sentence to translate (source language).")
    src: Lang
    tgt: Lang
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    min_match: float | None = Field(None, ge=0, le=100, description="Only candidates at or above this match %.")
    explain: bool = Field(True, description="Candidates as objects with score and text (scoi select --explain).")
    coverage: bool = Field(False, description="Add which pick covers which word and tree term, and the pool.")
    tree: bool = Field(True, description="With coverage: the dependency tree as displaCy SVG.")


class PromptRequest(_Strict):
    text: str = Field(min_length=1)
    src: Lang
    tgt: Lang
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    template: Choice = Field(defaults.TEMPLATE, description=f"One of {', '.join(TEMPLATES)}.")
    order: Choice = defaults.ORDER
    seed: int = defaults.SEED


class TranslateRequest(PromptRequest):
    model: Choice = Field(description="A model name the server was started with (GET /api/config).")
    max_new_tokens: int = Field(defaults.MAX_NEW_TOKENS, ge=1, le=1024)


class JobRequest(_Strict):
    sentences: list[str] = Field(min_length=1, description="One item per sentence, in order.")
    references: list[str] | None = None
    src: Lang
    tgt: Lang
    model: Choice
    name: str | None = Field(None, min_length=1, max_length=200)
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    template: Choice = defaults.TEMPLATE
    order: Choice = defaults.ORDER
    max_new_tokens: int = Field(defaults.MAX_NEW_TOKENS, ge=1, le=1024)


class GapsRequest(_Strict):
    sentences: list[str] = Field(min_length=1)
    src: Lang
    tgt: Lang
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    limit: int = Field(50, ge=1, le=1000)


# --------------------------------------------------------------------------- middleware
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
                await _send_json(send, 400, {"error": f"bad Content-Length header {length[:40]!r}"})
                return
            if too_big:
                await _send_json(send, 413, {"error": self._message()})
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
                await _send_json(send, 413, {"error": self._message()})
                return
            if over:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, limited, guarded_send)

    def _message(self) -> str:
        return f"request body larger than the server's limit of {self.max_bytes} bytes"


async def _send_json(send: Callable, status: int, body: dict) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


# --------------------------------------------------------------------------- the service
class Service:
    """What requests share: the selectors, the loaded backends, the configuration."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.selectors = SelectorPool(config.url, pool=config.pool, statement_timeout_s=config.limits.timeout_s)
        self._backends: dict[str, tuple[Any, threading.Lock]] = {}
        self._backend_lock = threading.Lock()

    def connect(self) -> psycopg.Connection:
        from scoi.jobs.store import connect

        return connect(self.config.url)

    def backend(self, name: str) -> tuple[Any, threading.Lock]:
        """The configured model ``name``, loaded on first use (one at a time per model)."""
        model = self.config.models.get(name)
        if model is None:
            raise ApiError(400, f"unknown model {name!r}; this server has: "
                                f"{', '.join(self.config.models) or 'none (start it with --model NAME=SPEC)'}")
        with self._backend_lock:
            entry = self._backends.get(name)
            if entry is None:
                from scoi.backends.loader import load_backend

                entry = self._backends[name] = (load_backend(model.spec, **model.options), threading.Lock())
        return entry

    def model_name(self, spec: str) -> str | None:
        """The configured name of a backend spec (jobs store specs; clients see names)."""
        return next((m.name for m in self.config.models.values() if m.spec == spec), None)

    def check_text(self, text: str, what: str = "text") -> str:
        limit = self.config.limits.max_chars
        if len(text) > limit:
            raise ApiError(413, f"{what} has {len(text)} characters; the server's limit is {limit}")
        if "\x00" in text:
            raise ApiError(400, f"{what} contains a NUL character")
        return text

    def check_k(self, k: int) -> int:
        if k > self.config.limits.max_k:
            raise ApiError(400, f"k = {k} is over the server's limit of {self.config.limits.max_k}")
        return k

    def check_batch(self, sentences: list[str]) -> list[str]:
        limit = self.config.limits.max_sentences
        if len(sentences) > limit:
            raise ApiError(413, f"{len(sentences)} sentences; the server's limit is {limit} per request")
        return [self.check_text(s.strip(), f"sentence {i}") for i, s in enumerate(sentences, 1)]

    def close(self) -> None:
        self.selectors.close()
        for backend, _ in self._backends.values():
            close = getattr(backend, "close", None)
            if close is not None:
                close()


async def run_limited(service: Service, work: Callable[[], T]) -> T:
    """``work()`` in a worker thread under the request time limit, library errors mapped
    to their HTTP answer (the message is the one the CLI prints)."""
    from scoi.backends.base import BackendError
    from scoi.jobs.spec import JobError
    from scoi.selector import SelectionError

    timeout = service.config.limits.timeout_s
    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except TimeoutError:
        raise ApiError(504, f"the request took longer than the server's limit of {timeout:g} s") from None
    except ApiError:
        raise
    except Busy as e:
        raise ApiError(503, str(e)) from None
    except JobError as e:
        raise ApiError(404 if str(e).startswith("no job ") else 400, str(e)) from None
    except (SelectionError, ValueError) as e:
        raise ApiError(400, str(e)) from None
    except BackendError as e:
        raise ApiError(502, str(e)) from None
    except psycopg.errors.QueryCanceled:
        raise ApiError(504, f"a database statement took longer than the server's limit of {timeout:g} s") from None
    except Exception:
        log.exception("request failed")
        raise ApiError(500, "internal error; the server's log has the details") from None


def create_app(config: ServeConfig, *, warm: list[tuple[str, str]] | None = None) -> FastAPI:
    """The application for ``config`` (``warm``: directions whose selectors load at start)."""
    config.check()
    service = Service(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if warm:
            from scoi.service.selectors import warm_all

            await anyio.to_thread.run_sync(warm_all, service.selectors, warm, log.warning)
        yield
        await anyio.to_thread.run_sync(service.close)

    app = FastAPI(title="scoi", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="In-context example selection (SCOI) and translation over a PostgreSQL "
                              "translation memory. Errors are JSON: {\"error\": \"...\"}.")
    app.state.service = service
    app.add_middleware(BodyLimit, max_bytes=config.limits.max_body_bytes)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return JSONResponse({"error": "; ".join(parts), "details": json.loads(json.dumps(exc.errors(), default=str))},
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    bearer = HTTPBearer(auto_error=False, description=f"The server's {TOKEN_ENV}, when it has one.")

    def authorised(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:  # noqa: B008
        if config.token is None:
            return
        given = creds.credentials if creds is not None else ""
        if not hmac.compare_digest(given.encode(), config.token.encode()):
            raise ApiError(401, "missing or wrong token: send 'Authorization: Bearer TOKEN' with the server's "
                                f"{TOKEN_ENV}")

    api = APIRouter(prefix="/api", dependencies=[Depends(authorised)])
    register_routes(api, service)
    app.include_router(api)

    @app.get("/api/health", tags=["service"])
    async def health() -> dict[str, Any]:
        """Whether the server and its database answer (no token needed)."""
        def ping() -> None:
            with service.connect() as conn:
                conn.execute("SELECT 1")
        try:
            await run_limited(service, ping)
            db = "ok"
        except ApiError:
            db = "unreachable"
        return {"status": "ok" if db == "ok" else "degraded", "database": db, "version": __version__}

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    mount_docs(app)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(str(STATIC.joinpath("index.html")), headers=PAGE_HEADERS)

    return app


def mount_docs(app: FastAPI) -> None:
    """Swagger UI at /docs from the files of the swagger-ui-bundle package, so the API docs
    work on a machine without internet (FastAPI's default loads them from a CDN)."""
    import swagger_ui_bundle
    from fastapi.openapi.docs import get_swagger_ui_html

    app.mount("/docs-static", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title="scoi API",
                                   swagger_js_url="/docs-static/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-static/swagger-ui.css",
                                   swagger_favicon_url="/docs-static/favicon-32x32.png")


#: The page loads only its own files; displaCy's SVG carries inline styles.
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def register_routes(api: APIRouter, service: Service) -> None:
    """The ``/api`` endpoints (the router carries the token check)."""
    from scoi.service import routes

    routes.register(api, service)

"""The FastAPI application of ``scoi serve``: the CLI's library calls over HTTP, and the page.

Every endpoint under ``/api`` runs its work in a worker thread under the request time
limit, answers errors as ``{"error": "..."}`` with the texts the CLI prints (less any URL
or file path: :func:`scoi.service.guard.redact`), and takes only texts and choices among
the server's names (models, templates, methods): never SQL, file paths, templates files or
backend URLs (``extra`` request fields are refused).
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from importlib import resources
from typing import Annotated, Any, TypeVar

import anyio
import fastapi_offline
import psycopg
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from scoi import __version__
from scoi.backends.base import BackendError
from scoi.backends.loader import load_backend
from scoi.backends.spec import parse_spec
from scoi.core import defaults
from scoi.db.queries import load
from scoi.jobs.spec import JobError
from scoi.jobs.store import connect
from scoi.selection.selector import SelectionError
from scoi.service.config import TEMPLATES, TOKEN_ENV, ModelConfig, ServeConfig
from scoi.service.guard import Guard, redact, send_json
from scoi.service.selectors import Busy, SelectorPool

log = logging.getLogger("scoi.serve")
SQL = load("serve")
T = TypeVar("T")
STATIC = resources.files("scoi.service").joinpath("static")
Lang = Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}$", description="Language code, e.g. fr")]
Choice = Annotated[str, Field(min_length=1, max_length=40)]
#: The largest value PostgreSQL's bigint (job ids, offsets) holds.
BIGINT_MAX = 2**63 - 1


class ApiError(Exception):
    """An answer other than 200: its status and the message the client sees."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


class ErrorBody(BaseModel):
    """Every answer other than 2xx."""

    error: str = Field(description="One line saying what was wrong and what is accepted.")


class InvalidBody(ErrorBody):
    """422: a body, path or query value that is malformed (not JSON, wrong type, NaN, a
    lone surrogate, a NUL, a blank sentence, a number out of range)."""

    details: list[dict[str, Any]] = Field(description="Each finding: loc (where), msg, type.")


#: The error answers the API declares (OpenAPI) besides 422, which every route may give.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in (
        (400, "A choice the server does not offer (method, template, model, direction), or over a limit."),
        (401, "The token is missing or wrong (servers started with SCOI_SERVE_TOKEN)."),
        (403, "A state-changing request from another origin (servers without a token)."),
        (404, "No such job or schedule."),
        (413, "A body, sentence or batch over the server's limits."),
        (421, "A Host other than this machine's (servers without a token)."),
        (502, "The model's backend failed (no backend URL or path is shown)."),
        (503, "The database is unavailable, a model is still loading, or the direction's selector stayed busy."),
        (504, "The request took longer than the server's time limit."))}
ERROR_RESPONSES[422] = {"model": InvalidBody, "description": "A malformed body, path or query value."}


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
    where: dict[str, str] | None = Field(None, description=(
        "Only pairs whose metadata holds each key with that string value, e.g. {\"domain\": \"legal\"} "
        "(scoi select --where domain=legal)."))
    glossary: str | None = Field(None, min_length=1, max_length=200,
                                 description="A glossary's name: the terms found in the sentence (docs/glossary.md).")


class PromptRequest(_Strict):
    text: str = Field(min_length=1)
    src: Lang
    tgt: Lang
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    template: Choice = Field(defaults.TEMPLATE, description=f"One of {', '.join(TEMPLATES)}.")
    order: Choice = defaults.ORDER
    seed: int = defaults.SEED
    where: dict[str, str] | None = Field(None, description=(
        "Only pairs whose metadata holds each key with that string value, e.g. {\"domain\": \"legal\"} "
        "(scoi select --where domain=legal)."))
    glossary: str | None = Field(None, min_length=1, max_length=200,
                                 description="A glossary's name: the terms found in the sentence (docs/glossary.md).")
    min_match: float | None = Field(None, ge=0, le=100, description="Only examples at or above this match %.")


class TranslateRequest(PromptRequest):
    model: Choice = Field(description="A model name the server was started with (GET /api/config).")
    max_new_tokens: int = Field(defaults.MAX_NEW_TOKENS, ge=1, le=1024)
    reuse: Choice = Field(defaults.REUSE, description=(
        "exact: a sentence stored verbatim (after whitespace and Unicode normalisation, within where) gets its "
        "stored translation, without the model (origin tm); off: the model always translates."))


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
    reuse: Choice = Field(defaults.REUSE, description=(
        "exact: a sentence stored verbatim (after whitespace and Unicode normalisation, within where) gets its "
        "stored translation, without the model (origin tm); off: the model always translates."))
    where: dict[str, str] | None = Field(None, description=(
        "Only pairs whose metadata holds each key with that string value, e.g. {\"domain\": \"legal\"} "
        "(scoi select --where domain=legal)."))
    glossary: str | None = Field(None, min_length=1, max_length=200,
                                 description="A glossary's name: terms into prompts, outputs checked (docs/glossary.md).")
    min_match: float | None = Field(None, ge=0, le=100, description="Only examples at or above this match %.")


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


# --------------------------------------------------------------------------- the service
class ModelSlot:
    """One configured model: loaded once (at start, in the background, so a first request
    finds it ready or polls ``GET /api/models``), then used by one request at a time."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.state = "not loaded"  # then loading, ready or failed
        self.error: str | None = None
        self.load_s: float | None = None
        self.backend: Any = None
        self.lock = threading.Lock()  # one generate() at a time
        self.done = threading.Event()
        self._started = threading.Lock()

    def load(self) -> None:
        """Load the backend (once; later calls return at once or wait for the first)."""
        if not self._started.acquire(blocking=False):
            self.done.wait()
            return
        self.state, t0 = "loading", time.monotonic()
        try:
            self.backend = load_backend(self.config.spec, **self.config.options)
            self.state = "ready"
        except Exception as e:  # noqa: BLE001 - any failure is this model's state, shown to clients
            log.warning("model %s cannot be loaded: %s", self.config.name, e)
            self.state, self.error = "failed", redact(str(e).strip().splitlines()[0] if str(e).strip() else
                                                      type(e).__name__)
        finally:
            self.load_s = round(time.monotonic() - t0, 3)
            self.done.set()

    def start(self) -> None:
        """Load in a background thread (no-op when loading or loaded)."""
        if self.state == "not loaded":
            threading.Thread(target=self.load, name=f"load-{self.config.name}", daemon=True).start()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.config.name, "kind": parse_spec(self.config.spec).kind, "state": self.state,
                "error": self.error, "load_s": self.load_s}


class Service:
    """What requests share: the selectors, the loaded backends, the configuration."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.selectors = SelectorPool(config.url, pool=config.pool, statement_timeout_s=config.limits.timeout_s,
                                      embedder=config.embedder, log=log)
        self.models = {name: ModelSlot(m) for name, m in config.models.items()}

    def connect(self) -> psycopg.Connection:
        return connect(self.config.url)

    def load_models(self) -> None:
        """Load every configured model, one after the other (start-up, in a background thread)."""
        for slot in self.models.values():
            slot.load()

    def backend(self, name: str) -> tuple[Any, threading.Lock]:
        """The configured model ``name`` once loaded; 503 while it is still loading after most
        of the request's time, 502 when it cannot be loaded."""
        slot = self.models.get(name)
        if slot is None:
            raise ApiError(400, f"unknown model {name!r}; this server has: "
                                f"{', '.join(self.models) or 'none (start it with --model NAME=SPEC)'}")
        slot.start()
        if not slot.done.wait(self.config.limits.timeout_s * 0.8):
            raise ApiError(503, f"model {name!r} is still loading; retry later (GET /api/models shows when it "
                                "is ready)", headers={"Retry-After": "5"})
        if slot.state != "ready":
            raise ApiError(502, f"model {name!r} cannot be loaded: {slot.error}")
        return slot.backend, slot.lock

    def model_name(self, spec: str) -> str | None:
        """The configured name of a backend spec (jobs store specs; clients see names)."""
        return next((m.name for m in self.config.models.values() if m.spec == spec), None)

    def check_text(self, text: str, what: str = "text", *, blank_ok: bool = False) -> str:
        """``text`` within the length limit, storable (no NUL, no lone surrogate) and,
        unless ``blank_ok``, not blank."""
        limit = self.config.limits.max_chars
        if len(text) > limit:
            raise ApiError(413, f"{what} has {len(text)} characters; the server's limit is {limit}")
        problem = text_problem(text)
        if problem:
            raise ApiError(422, f"{what} {problem}")
        if not blank_ok and not text.strip():
            raise ApiError(422, f"{what} is blank")
        return text

    def check_k(self, k: int) -> int:
        if k > self.config.limits.max_k:
            raise ApiError(400, f"k = {k} is over the server's limit of {self.config.limits.max_k}")
        return k

    def check_batch(self, sentences: list[str], what: str = "sentences", *, blank_ok: bool = False) -> list[str]:
        """Each sentence checked as :meth:`check_text`, named by its index (0-based)."""
        limit = self.config.limits.max_sentences
        if len(sentences) > limit:
            raise ApiError(413, f"{len(sentences)} {what}; the server's limit is {limit} per request")
        return [self.check_text(s, f"{what}[{i}]", blank_ok=blank_ok).strip() for i, s in enumerate(sentences)]

    def close(self) -> None:
        self.selectors.close()
        for slot in self.models.values():
            close = getattr(slot.backend, "close", None)
            if close is not None:
                close()


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored or sent on (PostgreSQL text holds no NUL; UTF-8 no
    lone surrogate), or None."""
    for i, c in enumerate(text):
        if c == "\x00":
            return f"contains a NUL character (U+0000) at position {i}"
        if "\ud800" <= c <= "\udfff":
            return f"contains a lone surrogate (U+{ord(c):04X}) at position {i}; send valid UTF-8 text"
    return None


def check_ref(value: str, what: str) -> str:
    """A job or schedule reference from a path or query: no NUL, and an id PostgreSQL's
    bigint holds (422 otherwise, not a database error)."""
    problem = text_problem(value)
    if problem:
        raise ApiError(422, f"{what} {problem}")
    text = value.strip()
    if text.isdigit() and int(text) > BIGINT_MAX:
        raise ApiError(422, f"{what} {text[:30]}{'...' if len(text) > 30 else ''} is out of range: job ids are "
                            f"at most {BIGINT_MAX}")
    return value


async def run_limited(service: Service, work: Callable[[], T]) -> T:
    """``work()`` in a worker thread under the request time limit, library errors mapped
    to their HTTP answer (the message is the one the CLI prints)."""
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
        log.warning("backend failed: %s", e)  # the whole text (URLs, paths) stays in the log
        raise ApiError(502, str(e)) from None
    except psycopg.errors.QueryCanceled:
        raise ApiError(504, f"a database statement took longer than the server's limit of {timeout:g} s") from None
    except psycopg.OperationalError as e:
        log.warning("database unavailable: %s", str(e).strip())
        raise ApiError(503, "database unavailable", headers={"Retry-After": "5"}) from None
    except Exception:
        log.exception("request failed")
        raise ApiError(500, "internal error; the server's log has the details") from None


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
            from scoi.service.selectors import warm_all

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
            why = ("nested too deeply" if isinstance(exc.__cause__, RecursionError)
                   else "not UTF-8 text (Content-Encoding is not accepted)" if isinstance(exc.__cause__, UnicodeError)
                   else f"unreadable ({type(exc.__cause__).__name__})")
            msg = f"the body is not a JSON object: {why}"
            return JSONResponse({"error": msg, "details": [{"loc": ["body"], "msg": msg, "type": "body_invalid"}]},
                                status_code=422)
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    bearer = HTTPBearer(auto_error=False, description=f"The server's {TOKEN_ENV}, when it has one.")

    def authorised(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:  # noqa: B008
        if config.token is None:
            return
        given = creds.credentials if creds is not None else ""
        if not hmac.compare_digest(given.encode(), config.token.encode()):
            raise ApiError(401, "missing or wrong token: send 'Authorization: Bearer TOKEN' with the server's "
                                f"{TOKEN_ENV}")

    api = APIRouter(prefix="/api", dependencies=[Depends(authorised)], responses=ERROR_RESPONSES)
    register_routes(api, service)
    app.include_router(api)

    @app.get("/api/health", tags=["service"], responses={422: ERROR_RESPONSES[422], 421: ERROR_RESPONSES[421]})
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
        return FileResponse(str(STATIC.joinpath("index.html")))

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
        from fastapi.openapi.utils import get_openapi

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


def mount_docs(app: FastAPI) -> None:
    """Swagger UI 5 (it reads OpenAPI 3.1) at /docs from the files fastapi-offline ships,
    so the API docs work without internet (FastAPI's default loads them from a CDN). Only
    the three files the page needs are served, and its start-up script is a file of ours:
    the CSP allows no inline script."""
    files = resources.files(fastapi_offline).joinpath("static")
    assets = {"swagger-ui-bundle.js": (files, "text/javascript"), "swagger-ui.css": (files, "text/css"),
              "favicon.png": (files, "image/png"), "docs.js": (STATIC, "text/javascript")}

    @app.get("/docs-static/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> FileResponse:
        if name not in assets:
            raise ApiError(404, f"no file {name[:60]!r} under /docs-static")
        folder, media = assets[name]
        return FileResponse(str(folder.joinpath(name)), media_type=media)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(DOCS_PAGE)


DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>scoi API</title>
<link rel="stylesheet" href="/docs-static/swagger-ui.css"><link rel="icon" href="/docs-static/favicon.png">
</head><body><div id="swagger-ui"></div>
<script src="/docs-static/swagger-ui-bundle.js"></script><script src="/docs-static/docs.js"></script>
</body></html>
"""


def register_routes(api: APIRouter, service: Service) -> None:
    """The ``/api`` endpoints (the router carries the token check)."""
    from scoi.service import routes

    routes.register(api, service)

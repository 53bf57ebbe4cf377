"""What the requests of ``scoi serve`` share (the selectors, the loaded models, the
configuration: :class:`Service`), the checks on what a request sends, and
:func:`run_limited`, which runs a route's work in a worker thread under the request time
limit and maps library errors to their HTTP answer. No routes here: the routers
(scoi.service.routers) take a Service through scoi.service.deps."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import psycopg

from scoi.backends.base import BackendError
from scoi.backends.loader import load_backend
from scoi.backends.spec import parse_spec
from scoi.db.queries import load
from scoi.jobs.spec import JobError
from scoi.jobs.store import connect
from scoi.selection.types import SelectionError
from scoi.service.config import ModelConfig, ServeConfig
from scoi.service.guard import redact
from scoi.service.models import BIGINT_MAX
from scoi.service.selectors import Busy, SelectorCache

log = logging.getLogger("scoi.serve")
SQL = load("serve")
T = TypeVar("T")


class ApiError(Exception):
    """An answer other than 200: its status and the message the client sees."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


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
        self.selectors = SelectorCache(config.url, pool=config.pool, statement_timeout_s=config.limits.timeout_s,
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

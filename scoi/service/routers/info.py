"""What the server offers and holds: ``/api/config`` (the names a request may choose),
``/api/models`` (which models are loaded), ``/api/corpora`` and, without a token,
``/api/health``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from scoi import __version__
from scoi.core.methods import EMBEDDING_METHODS, METHODS
from scoi.core.prompt import ORDERS
from scoi.corpora import list_corpora
from scoi.glossary import list_glossaries
from scoi.service.config import TEMPLATES
from scoi.service.deps import ConnectDep, SelectorsDep, ServiceDep, SettingsDep
from scoi.service.models import ERROR_RESPONSES
from scoi.service.state import SQL, ApiError, run_limited

router = APIRouter()
#: Outside the token check: a load balancer or a person asks whether the server is up.
health_router = APIRouter(tags=["service"])


@router.get("/config", tags=["service"])
async def config(service: ServiceDep, settings: SettingsDep, selectors: SelectorsDep,
                 connect: ConnectDep) -> dict[str, Any]:
    """The names a request may choose among, the directions served and the limits."""
    def directions() -> tuple[list[str], list[str]]:
        with connect() as conn:
            return ([f"{s}-{t}" for s, t in conn.execute(SQL["directions"]).fetchall()],
                    [g["name"] for g in list_glossaries(conn)])
    served, glossaries = await run_limited(service, directions)
    lim = settings.limits
    return {"models": sorted(settings.models), "methods": list(METHODS),
            "embedding_methods": list(EMBEDDING_METHODS), "templates": list(TEMPLATES), "orders": list(ORDERS),
            "directions": served, "glossaries": glossaries, "warm": selectors.directions(),
            "limits": {"max_body_bytes": lim.max_body_bytes, "max_chars": lim.max_chars,
                       "max_sentences": lim.max_sentences, "timeout_s": lim.timeout_s, "max_k": lim.max_k},
            "token_required": settings.token is not None}


@router.get("/corpora", tags=["corpora"])
async def corpora(service: ServiceDep, connect: ConnectDep) -> list[dict[str, Any]]:
    """Corpora with their pair counts (`scoi corpora --json`)."""
    def work() -> list[dict[str, Any]]:
        with connect() as conn:
            return list_corpora(conn)
    return await run_limited(service, work)


@router.get("/models", tags=["service"])
async def models(service: ServiceDep) -> list[dict[str, Any]]:
    """The server's models and whether each is loaded (they load in the background at
    start: ``loading``, ``ready``, or ``failed`` with the reason); poll it before a
    first translation of a large local model."""
    return [slot.to_dict() for slot in service.models.values()]


@health_router.get("/health", responses={422: ERROR_RESPONSES[422], 421: ERROR_RESPONSES[421]})
async def health(service: ServiceDep, connect: ConnectDep) -> dict[str, Any]:
    """Whether the server and its database answer (no token needed)."""
    def ping() -> None:
        with connect() as conn:
            conn.execute("SELECT 1")
    try:
        await run_limited(service, ping)
        db = "ok"
    except ApiError:
        db = "unreachable"
    return {"status": "ok" if db == "ok" else "degraded", "database": db, "version": __version__}

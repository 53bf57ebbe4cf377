"""``POST /api/lookup``: the fuzzy lookup (scoi.lookup) over HTTP, a CAT tool's TM pane."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from scoi.core import defaults
from scoi.core.limits import LIMITS
from scoi.service.app import Service, run_limited

Lang = Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}$", description="Language code, e.g. fr")]


class LookupRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="The sentence to look up (source language).")
    src: Lang
    tgt: Lang
    min_match: float = Field(defaults.LOOKUP_MIN_MATCH, ge=0, le=100, description="Lowest match % returned.")
    n: int = Field(defaults.LOOKUP_N, ge=1, le=100, description="Matches returned at most.")
    pool: int = Field(defaults.LOOKUP_POOL, ge=1, le=LIMITS["pool"][1],
                      description="Exact BM25 candidates the match % is computed on.")


def register(api: APIRouter, service: Service) -> None:
    @api.post("/lookup", tags=["selection"])
    async def lookup(body: LookupRequest) -> dict[str, Any]:
        """The stored pairs closest to a sentence by match %, best first (`scoi lookup --json`)."""
        from scoi.lookup import lookup as find

        text = service.check_text(body.text).strip()

        def work() -> dict[str, Any]:
            return service.selectors.run(
                body.src, body.tgt, lambda sel: find(sel, text, n=body.n, min_match=body.min_match, pool=body.pool),
                wait_s=service.config.limits.timeout_s).to_dict()
        return await run_limited(service, work)

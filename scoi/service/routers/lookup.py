"""``POST /api/lookup``: the fuzzy lookup (scoi.lookup) over HTTP, a CAT tool's TM pane."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from scoi.lookup import lookup as find
from scoi.service.deps import SelectorsDep, ServiceDep, SettingsDep
from scoi.service.models import LookupRequest
from scoi.service.state import run_limited

router = APIRouter(tags=["selection"])


@router.post("/lookup")
async def lookup(body: LookupRequest, service: ServiceDep, selectors: SelectorsDep,
                 settings: SettingsDep) -> dict[str, Any]:
    """The stored pairs closest to a sentence by match %, best first (`scoi lookup --json`)."""
    text = service.check_text(body.text).strip()

    def search(sel: Any) -> Any:
        with sel.filtered(body.where):  # the request's metadata filter, for this call only
            return find(sel, text, n=body.n, min_match=body.min_match, pool=body.pool)

    def work() -> dict[str, Any]:
        return selectors.run(body.src, body.tgt, search, wait_s=settings.limits.timeout_s).to_dict()
    return await run_limited(service, work)

"""``/api/translate``: select, render the prompt and translate one sentence with one of the
server's models, or insert the stored translation of an exact match (scoi.reuse)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from scoi.core.exact import REUSE_MODES, check_where
from scoi.core.answer import extract_answer
from scoi.core.prompt import stop_markers
from scoi.reuse import Match, exact_matches
from scoi.service.deps import ServiceDep
from scoi.service.models import TranslateRequest
from scoi.service.routers.selection import prompt_for
from scoi.service.state import ApiError, Service, run_limited

router = APIRouter(tags=["selection"])


@router.post("/translate")
async def translate(body: TranslateRequest, service: ServiceDep) -> dict[str, Any]:
    """Select, render the prompt, and translate with one of the server's models."""
    def work() -> dict[str, Any]:
        backend, lock = service.backend(body.model)  # unknown name: refused before any selection
        if (reused := reused_match(service, body)) is not None:  # an exact match: no selection, no model
            return {"output": reused.target, "raw_output": None, "model": body.model, "prompt": None,
                    "generate_ms": 0.0, "selection": None, "origin": "tm", "origin_pair_id": reused.pair_id}
        result, text = prompt_for(service, body)
        with lock:
            gen = backend.generate([text], max_new_tokens=body.max_new_tokens, stop=stop_markers(body.template))[0]
        return {"output": extract_answer(gen.text), "raw_output": gen.text, "model": body.model,
                "prompt": text, "generate_ms": round(gen.seconds * 1000, 3),
                "selection": result.to_dict(explain=True), "origin": "llm", "origin_pair_id": None}
    return await run_limited(service, work)


def reused_match(service: Service, body: TranslateRequest) -> Match | None:
    """The stored translation of the sentence's exact match when the request reuses
    (``reuse: exact``, within its ``where``), else None."""
    if body.reuse not in REUSE_MODES:
        raise ApiError(400, f"unknown reuse {body.reuse!r}; expected one of {', '.join(REUSE_MODES)}")
    if body.reuse == "off":
        return None
    service.check_text(body.text)
    try:
        where = check_where(body.where)
    except ValueError as e:
        raise ApiError(400, str(e)) from None
    with service.connect() as conn:
        return exact_matches(conn, body.src, body.tgt, [body.text], where=where).get(body.text)

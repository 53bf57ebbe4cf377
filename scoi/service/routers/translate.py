"""``/api/translate``: select, render the prompt and translate one sentence with one of the
server's models, or insert the stored translation of an exact match (scoi.reuse)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter

from scoi.core.exact import REUSE_MODES, check_where
from scoi.core.answer import extract_answer
from scoi.core.prompt import Example, stop_markers
from scoi.core.prompt_fit import fit_prompt
from scoi.reuse import Match, exact_matches
from scoi.service.deps import ServiceDep
from scoi.service.models import TranslateRequest
from scoi.service.routers.selection import renderer_for
from scoi.service.state import ApiError, Service, run_limited

router = APIRouter(tags=["selection"])


@router.post("/translate")
async def translate(body: TranslateRequest, service: ServiceDep) -> dict[str, Any]:
    """Select, render the prompt, and translate with one of the server's models; the
    last-ranked examples are dropped until the prompt fits the model's context."""
    def work() -> dict[str, Any]:
        backend, lock = service.backend(body.model)  # unknown name: refused before any selection
        if (reused := reused_match(service, body)) is not None:  # an exact match: no selection, no model
            return {"output": reused.target, "raw_output": None, "model": body.model, "prompt": None,
                    "generate_ms": 0.0, "selection": None, "origin": "tm", "origin_pair_id": reused.pair_id,
                    "examples_used": None, "examples_dropped": None}
        result, examples, render = renderer_for(service, body)
        with lock:  # the tokenizer too is the model's: one request at a time
            text, used = fitted_prompt(backend, render, examples, body.max_new_tokens)
            gen = backend.generate([text], max_new_tokens=body.max_new_tokens, stop=stop_markers(body.template))[0]
        return {"output": extract_answer(gen.text), "raw_output": gen.text, "model": body.model,
                "prompt": text, "generate_ms": round(gen.seconds * 1000, 3),
                "selection": result.to_dict(explain=True), "origin": "llm", "origin_pair_id": None,
                "examples_used": used, "examples_dropped": len(examples) - used}
    return await run_limited(service, work)


def fitted_prompt(backend: Any, render: Callable[[Sequence[Example]], str], examples: list[Example],
                  max_new_tokens: int) -> tuple[str, int]:
    """The prompt with as many of ``examples`` (best first) as the backend's context holds
    beside ``max_new_tokens``, and how many: jobs' fitting (docs/jobs.md). A backend that
    does not know its context gets them all; one too short even without examples raises
    PromptTooLong (a ValueError: 400, one line)."""
    context = getattr(backend, "context_length", None)
    if not context:
        return render(examples), len(examples)
    return fit_prompt(render, examples, backend.count_tokens, context, max_new_tokens)


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

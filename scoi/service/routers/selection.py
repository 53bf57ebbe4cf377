"""``/api/select`` and ``/api/prompt``: ``scoi select`` and ``scoi prompt`` over HTTP, under
the direction's selector lock, in a worker thread under the request limit. The selection and
prompt helpers here are the translate router's too."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter

from scoi.core.prompt import Example, render_prompt
from scoi.glossary import GlossaryError, entries as glossary_entries, match as glossary_match
from scoi.service.config import TEMPLATES
from scoi.service.deps import ServiceDep
from scoi.service.explain import explain
from scoi.service.models import PromptRequest, SelectRequest
from scoi.service.state import ApiError, Service, run_limited

if TYPE_CHECKING:
    from scoi.selection.types import SelectionResult

router = APIRouter(tags=["selection"])


def select_for(service: Service, body: SelectRequest | PromptRequest, *, coverage: bool = False,
               tree: bool = True) -> tuple[SelectionResult, dict[str, Any] | None]:
    """(SelectionResult, coverage view or None) for a request's sentence, under the
    direction's selector lock."""
    text = service.check_text(body.text).strip()
    service.check_k(body.k)

    def work(sel):
        with sel.filtered(body.where):  # the request's metadata filter, for this call only
            result = sel.select(text, k=body.k, method=body.method, min_match=body.min_match)
            return result, (explain(sel, result, tree=tree) if coverage else None)

    return service.selectors.run(body.src, body.tgt, work, wait_s=service.config.limits.timeout_s)


def glossary_terms(service: Service, body: SelectRequest | PromptRequest) -> list[dict[str, Any]] | None:
    """The glossary terms found in the request's sentence (docs/glossary.md), or None without a glossary."""
    if body.glossary is None:
        return None
    try:
        with service.connect() as conn:
            found = glossary_entries(conn, body.glossary, body.src.lower(), body.tgt.lower())
    except GlossaryError as e:
        raise ApiError(400, str(e)) from None
    return [m.to_dict() for m in glossary_match(found, [body.text.strip()], body.src.lower())[0]]


def renderer_for(service: Service, body: PromptRequest
                 ) -> tuple[SelectionResult, list[Example], Callable[[Sequence[Example]], str]]:
    """The request's selection, its examples (selection order, best first) and the
    renderer of the request's prompt with any of them: ``/api/translate`` drops the
    last-ranked ones to fit its model's context, as jobs do (scoi.core.prompt_fit)."""
    if body.template not in TEMPLATES:
        raise ApiError(400, f"unknown template {body.template!r}; this server offers: {', '.join(TEMPLATES)}")
    terms = glossary_terms(service, body)
    result, _ = select_for(service, body)
    text = body.text.strip()

    def render(examples: Sequence[Example]) -> str:
        return render_prompt(text, list(examples), result.src_lang, result.tgt_lang, template=body.template,
                             order=body.order, seed=body.seed, glossary=terms or ())

    return result, [Example(p.src, p.tgt) for p in result.selected], render


def prompt_for(service: Service, body: PromptRequest) -> tuple[SelectionResult, str]:
    """The request's selection and the prompt rendered from it (``scoi prompt``)."""
    result, examples, render = renderer_for(service, body)
    return result, render(examples)


@router.post("/select")
async def select(body: SelectRequest, service: ServiceDep) -> dict[str, Any]:
    """The k examples that best cover a sentence: `scoi select --json [--explain]`'s
    object; with ``coverage``, which pick covers which word and tree term, and the pool."""
    def work() -> dict[str, Any]:
        terms = glossary_terms(service, body)
        result, cov = select_for(service, body, coverage=body.coverage, tree=body.tree)
        out = result.to_dict(explain=body.explain)
        if cov is not None:
            out["coverage"] = cov
        if terms is not None:
            out["glossary"] = terms
        return out
    return await run_limited(service, work)


@router.post("/prompt")
async def prompt(body: PromptRequest, service: ServiceDep) -> dict[str, Any]:
    """The prompt `scoi prompt` prints for the sentence, with its selection."""
    def work() -> dict[str, Any]:
        result, text = prompt_for(service, body)
        return {"prompt": text, "selection": result.to_dict(explain=True)}
    return await run_limited(service, work)

"""The ``/api`` endpoints: select, prompt, translate, jobs, corpora, configuration.

Each is the CLI's library call (Selector.select, render_prompt, jobs.create.submit /
status / list_jobs, scoi.corpora.list_corpora) in a worker thread under the request limit.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from scoi.glossary import GlossaryError, entries as glossary_entries, list_glossaries, match as glossary_match
from scoi.jobs.eval import term_summary
from scoi.service.app import (BIGINT_MAX, SQL, ApiError, JobRequest, PromptRequest, SelectRequest, Service,
                              TranslateRequest, check_ref, run_limited, text_problem)
from scoi.service.config import TEMPLATES
from scoi.service.guard import redact


def _select(service: Service, body: SelectRequest | PromptRequest, *, coverage: bool = False, tree: bool = True):
    """(SelectionResult, coverage view or None) for a request's sentence, under the
    direction's selector lock."""
    text = service.check_text(body.text).strip()
    service.check_k(body.k)

    def work(sel):
        with sel.filtered(body.where):  # the request's metadata filter, for this call only
            result = sel.select(text, k=body.k, method=body.method, min_match=body.min_match)
            if not coverage:
                return result, None
            from scoi.service.explain import explain

            return result, explain(sel, result, tree=tree)

    wait = service.config.limits.timeout_s
    return service.selectors.run(body.src, body.tgt, work, wait_s=wait)


def _terms(service: Service, body: SelectRequest | PromptRequest) -> list[dict[str, Any]] | None:
    """The glossary terms found in the request's sentence (docs/glossary.md), or None without a glossary."""
    if body.glossary is None:
        return None
    try:
        with service.connect() as conn:
            found = glossary_entries(conn, body.glossary, body.src.lower(), body.tgt.lower())
    except GlossaryError as e:
        raise ApiError(400, str(e)) from None
    return [m.to_dict() for m in glossary_match(found, [body.text.strip()], body.src.lower())[0]]


def _prompt(service: Service, body: PromptRequest) -> tuple[Any, str]:
    from scoi.core.prompt import Example, render_prompt

    if body.template not in TEMPLATES:
        raise ApiError(400, f"unknown template {body.template!r}; this server offers: {', '.join(TEMPLATES)}")
    terms = _terms(service, body)
    result, _ = _select(service, body)
    prompt = render_prompt(body.text.strip(), [Example(p.src, p.tgt) for p in result.selected], result.src_lang,
                           result.tgt_lang, template=body.template, order=body.order, seed=body.seed,
                           glossary=terms or ())
    return result, prompt


def register(api: APIRouter, service: Service) -> None:
    @api.post("/select", tags=["selection"])
    async def select(body: SelectRequest) -> dict[str, Any]:
        """The k examples that best cover a sentence: `scoi select --json [--explain]`'s
        object; with ``coverage``, which pick covers which word and tree term, and the pool."""
        def work() -> dict[str, Any]:
            terms = _terms(service, body)
            result, cov = _select(service, body, coverage=body.coverage, tree=body.tree)
            out = result.to_dict(explain=body.explain)
            if cov is not None:
                out["coverage"] = cov
            if terms is not None:
                out["glossary"] = terms
            return out
        return await run_limited(service, work)

    @api.post("/prompt", tags=["selection"])
    async def prompt(body: PromptRequest) -> dict[str, Any]:
        """The prompt `scoi prompt` prints for the sentence, with its selection."""
        def work() -> dict[str, Any]:
            result, text = _prompt(service, body)
            return {"prompt": text, "selection": result.to_dict(explain=True)}
        return await run_limited(service, work)

    @api.post("/translate", tags=["selection"])
    async def translate(body: TranslateRequest) -> dict[str, Any]:
        """Select, render the prompt, and translate with one of the server's models."""
        from scoi.core.prompt import extract_answer, stop_markers

        def work() -> dict[str, Any]:
            backend, lock = service.backend(body.model)  # unknown name: refused before any selection
            if (reused := _reused(service, body)) is not None:  # an exact match: no selection, no model
                return {"output": reused.target, "raw_output": None, "model": body.model, "prompt": None,
                        "generate_ms": 0.0, "selection": None, "origin": "tm", "origin_pair_id": reused.pair_id}
            result, text = _prompt(service, body)
            with lock:
                gen = backend.generate([text], max_new_tokens=body.max_new_tokens, stop=stop_markers(body.template))[0]
            return {"output": extract_answer(gen.text), "raw_output": gen.text, "model": body.model,
                    "prompt": text, "generate_ms": round(gen.seconds * 1000, 3),
                    "selection": result.to_dict(explain=True), "origin": "llm", "origin_pair_id": None}
        return await run_limited(service, work)

    @api.get("/config", tags=["service"])
    async def config() -> dict[str, Any]:
        """The names a request may choose among, the directions served and the limits."""
        from scoi.core.methods import EMBEDDING_METHODS, METHODS
        from scoi.core.prompt import ORDERS

        def directions() -> tuple[list[str], list[str]]:
            with service.connect() as conn:
                return ([f"{s}-{t}" for s, t in conn.execute(SQL["directions"]).fetchall()],
                        [g["name"] for g in list_glossaries(conn)])
        served, glossaries = await run_limited(service, directions)
        lim = service.config.limits
        return {"models": sorted(service.config.models), "methods": list(METHODS),
                "embedding_methods": list(EMBEDDING_METHODS), "templates": list(TEMPLATES), "orders": list(ORDERS),
                "directions": served, "glossaries": glossaries, "warm": service.selectors.directions(),
                "limits": {"max_body_bytes": lim.max_body_bytes, "max_chars": lim.max_chars,
                           "max_sentences": lim.max_sentences, "timeout_s": lim.timeout_s, "max_k": lim.max_k},
                "token_required": service.config.token is not None}

    @api.get("/corpora", tags=["corpora"])
    async def corpora() -> list[dict[str, Any]]:
        """Corpora with their pair counts (`scoi corpora --json`)."""
        from scoi.corpora import list_corpora

        def work() -> list[dict[str, Any]]:
            with service.connect() as conn:
                return list_corpora(conn)
        return await run_limited(service, work)

    @api.get("/jobs", tags=["jobs"])
    async def jobs() -> list[dict[str, Any]]:
        """Every job with its progress (`scoi job list --json`); ``model`` is the server's name for it."""
        from scoi.jobs.store import list_jobs

        def work() -> list[dict[str, Any]]:
            with service.connect() as conn:
                return [_public_job(service, r) for r in list_jobs(conn)]
        return await run_limited(service, work)

    @api.post("/jobs", tags=["jobs"], status_code=201)
    async def submit(body: JobRequest) -> dict[str, Any]:
        """A batch job, one item per sentence, for `scoi worker` to translate."""
        from scoi.jobs.create import submit as submit_job
        from scoi.jobs.spec import JobSpec

        model = service.config.models.get(body.model)
        if model is None:
            service.backend(body.model)  # raises the unknown-model error
        if body.template not in TEMPLATES:
            raise ApiError(400, f"unknown template {body.template!r}; this server offers: {', '.join(TEMPLATES)}")
        if body.name is not None and (problem := text_problem(body.name)):
            raise ApiError(422, f"name {problem}")
        sentences = service.check_batch(body.sentences)
        refs = (service.check_batch(body.references, "references", blank_ok=True) if body.references is not None
                else None)
        service.check_k(body.k)
        spec = JobSpec(src=body.src, tgt=body.tgt, model=model.spec, method=body.method, k=body.k,
                       template=body.template, name=body.name, order=body.order, max_new_tokens=body.max_new_tokens,
                       backend_options=dict(model.options), reuse=body.reuse, where=body.where,
                       min_match=body.min_match, glossary=body.glossary)

        def work() -> dict[str, Any]:
            with service.connect() as conn:
                job_id = submit_job(conn, spec, sentences, refs)
            # Not the signature: it names the backend spec (paths, hosts), which clients never see.
            return {"job_id": job_id, "name": body.name, "items": len(sentences), "model": body.model}
        return await run_limited(service, work)

    @api.get("/jobs/{ref}", tags=["jobs"])
    async def job(ref: str, offset: int = Query(0, ge=0, le=BIGINT_MAX),
                  limit: int = Query(100, ge=1, description="Items per page (at most the server's page limit).")
                  ) -> dict[str, Any]:
        """A job's progress (`scoi job status --json`) and one page of its items with their outputs."""
        from psycopg.rows import dict_row

        from scoi.jobs.store import get_job, status

        check_ref(ref, "job")
        if limit > service.config.limits.max_items_page:
            raise ApiError(400, f"limit {limit} is over the server's page limit of {service.config.limits.max_items_page}")

        def work() -> dict[str, Any]:
            with service.connect() as conn:
                j = get_job(conn, ref[:200])
                st = _public_job(service, status(conn, j.id))
                if (terms := term_summary(conn, j)) is not None:
                    st["terms"] = terms
                with conn.cursor(row_factory=dict_row) as cur:
                    items = cur.execute(SQL["job_items_page"], {"id": j.id, "offset": offset, "limit": limit}).fetchall()
            return {"job": st, "items": [_public_errors(i) for i in items], "offset": offset, "limit": limit}
        return await run_limited(service, work)

    @api.get("/models", tags=["service"])
    async def models() -> list[dict[str, Any]]:
        """The server's models and whether each is loaded (they load in the background at
        start: ``loading``, ``ready``, or ``failed`` with the reason); poll it before a
        first translation of a large local model."""
        return [slot.to_dict() for slot in service.models.values()]

    from scoi.service import gaps_routes, lookup_routes

    gaps_routes.register(api, service)
    lookup_routes.register(api, service)


def _reused(service: Service, body: TranslateRequest) -> Any:
    """The stored translation of the sentence's exact match (scoi.reuse.Match) when the
    request reuses (``reuse: exact``, within its ``where``), else None."""
    from scoi.core.exact import REUSE_MODES, check_where
    from scoi.reuse import exact_matches

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


def _public_job(service: Service, row: dict[str, Any]) -> dict[str, Any]:
    """A job row as clients see it: the model's server name, never its spec (paths, URLs)."""
    out = _public_errors(row)
    if "model" in out:
        out["model"] = service.model_name(out["model"])
    return out


def _public_errors(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its error and warning texts (workers' failures, nested lists of them too)
    less URLs and paths."""
    return {k: _redacted(v) if "error" in k or "warning" in k else v for k, v in row.items()}


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value

"""``/api/jobs``: submit a batch job for ``scoi worker``, list jobs, read one job's progress
and outputs. Clients see a model by the server's name for it, never its backend spec (paths,
URLs), and error texts without URLs or paths."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from psycopg.rows import dict_row

from scoi.core import defaults
from scoi.jobs.create import submit as submit_job
from scoi.jobs.eval import term_summary
from scoi.jobs.store import get_job, list_jobs, status
from scoi.service.config import TEMPLATES
from scoi.service.deps import ConnectDep, ServiceDep, SettingsDep
from scoi.service.guard import redact
from scoi.service.models import BIGINT_MAX, JobRequest
from scoi.service.state import SQL, ApiError, Service, check_ref, run_limited, text_problem

router = APIRouter(prefix="/jobs", tags=["jobs"])


@router.get("")
async def jobs(service: ServiceDep, connect: ConnectDep) -> list[dict[str, Any]]:
    """Every job with its progress (`scoi job list --json`); ``model`` is the server's name for it."""
    def work() -> list[dict[str, Any]]:
        with connect() as conn:
            return [public_job(service, r) for r in list_jobs(conn)]
    return await run_limited(service, work)


@router.post("", status_code=201)
async def submit(body: JobRequest, service: ServiceDep, settings: SettingsDep, connect: ConnectDep) -> dict[str, Any]:
    """A batch job, one item per sentence, for `scoi worker` to translate."""
    model = settings.models.get(body.model)
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
    spec = body.spec(model)

    def work() -> dict[str, Any]:
        with connect() as conn:
            job_id = submit_job(conn, spec, sentences, refs)
        # Not the signature: it names the backend spec (paths, hosts), which clients never see.
        return {"job_id": job_id, "name": body.name, "items": len(sentences), "model": body.model}
    return await run_limited(service, work)


@router.get("/{ref}")
async def job(ref: str, service: ServiceDep, settings: SettingsDep, connect: ConnectDep,
              offset: Annotated[int, Query(ge=0, le=BIGINT_MAX)] = 0,
              limit: Annotated[int, Query(ge=1, description="Items per page (at most the server's page limit).")
                               ] = defaults.SERVE_ITEMS_PAGE) -> dict[str, Any]:
    """A job's progress (`scoi job status --json`) and one page of its items with their outputs."""
    check_ref(ref, "job")
    if limit > settings.limits.max_items_page:
        raise ApiError(400, f"limit {limit} is over the server's page limit of {settings.limits.max_items_page}")

    def work() -> dict[str, Any]:
        with connect() as conn:
            j = get_job(conn, ref[:200])
            st = public_job(service, status(conn, j.id))
            if (terms := term_summary(conn, j)) is not None:
                st["terms"] = terms
            with conn.cursor(row_factory=dict_row) as cur:
                items = cur.execute(SQL["job_items_page"], {"id": j.id, "offset": offset, "limit": limit}).fetchall()
        return {"job": st, "items": [public_errors(i) for i in items], "offset": offset, "limit": limit}
    return await run_limited(service, work)


def public_job(service: Service, row: dict[str, Any]) -> dict[str, Any]:
    """A job row as clients see it: the model's server name, never its spec (paths, URLs)."""
    out = public_errors(row)
    if "model" in out:
        out["model"] = service.model_name(out["model"])
    return out


def public_errors(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its error and warning texts (workers' failures, nested lists of them too)
    less URLs and paths."""
    return {k: redacted(v) if "error" in k or "warning" in k else v for k, v in row.items()}


def redacted(value: Any) -> Any:
    """``value`` with every string in it redacted (scoi.service.guard.redact)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value

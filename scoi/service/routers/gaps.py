"""``/api/gaps``: coverage-gap analytics (scoi.gaps) over HTTP."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from scoi.core import defaults
from scoi.core.limits import LIMITS
from scoi.gaps import GapError, job_gaps, schedule_gaps, sentence_gaps as gaps_of
from scoi.service.deps import ConnectDep, SelectorsDep, ServiceDep, SettingsDep
from scoi.service.models import GapsRequest
from scoi.service.state import ApiError, check_ref, run_limited

router = APIRouter(prefix="/gaps", tags=["gaps"])


@router.get("")
async def recorded_gaps(service: ServiceDep, connect: ConnectDep,
                        job: Annotated[str | None, Query(max_length=200, description="A job id or name.")] = None,
                        schedule: Annotated[str | None, Query(max_length=200, description="A schedule's name.")] = None,
                        limit: Annotated[int, Query(ge=1, le=LIMITS["gaps_limit"][1])] = defaults.GAPS_LIMIT
                        ) -> dict[str, Any]:
    """What the memory lacks for a job's or a schedule's recorded selections (`scoi gaps --json`)."""
    if (job is None) == (schedule is None):
        raise ApiError(400, "give one of job=JOB or schedule=NAME")
    if job is not None:
        check_ref(job, "job")
    if schedule is not None:
        check_ref(schedule, "schedule")

    def work() -> dict[str, Any]:
        with connect() as conn:
            try:
                report = schedule_gaps(conn, schedule, limit) if schedule else job_gaps(conn, [job], limit)
            except GapError as e:
                raise ApiError(404 if str(e).startswith("no schedule") else 400, str(e)) from None
        return report.to_dict()
    return await run_limited(service, work)


@router.post("")
async def sentence_gaps(body: GapsRequest, service: ServiceDep, selectors: SelectorsDep,
                        settings: SettingsDep) -> dict[str, Any]:
    """What the memory lacks for these sentences, selected now (nothing is stored)."""
    sentences = service.check_batch(body.sentences)
    service.check_k(body.k)

    def work() -> dict[str, Any]:
        def run(sel):
            try:
                return gaps_of(sel, sentences, scope=f"{len(sentences)} sentences", k=body.k,
                               method=body.method, limit=body.limit)
            except GapError as e:
                raise ApiError(400, str(e)) from None
        return selectors.run(body.src, body.tgt, run, wait_s=settings.limits.timeout_s).to_dict()
    return await run_limited(service, work)

"""The ``/api/gaps`` endpoints: coverage-gap analytics (scoi.gaps) over HTTP."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from scoi.service.app import ApiError, GapsRequest, Service, check_ref, run_limited


def register(api: APIRouter, service: Service) -> None:
    @api.get("/gaps", tags=["gaps"])
    async def recorded_gaps(job: str | None = Query(None, max_length=200, description="A job id or name."),
                            schedule: str | None = Query(None, max_length=200, description="A schedule's name."),
                            limit: int = Query(50, ge=1, le=1000)) -> dict[str, Any]:
        """What the memory lacks for a job's or a schedule's recorded selections (`scoi gaps --json`)."""
        from scoi.gaps import GapError, job_gaps, schedule_gaps

        if (job is None) == (schedule is None):
            raise ApiError(400, "give one of job=JOB or schedule=NAME")
        if job is not None:
            check_ref(job, "job")
        if schedule is not None:
            check_ref(schedule, "schedule")

        def work() -> dict[str, Any]:
            with service.connect() as conn:
                try:
                    report = schedule_gaps(conn, schedule, limit) if schedule else job_gaps(conn, [job], limit)
                except GapError as e:
                    raise ApiError(404 if str(e).startswith("no schedule") else 400, str(e)) from None
            return report.to_dict()
        return await run_limited(service, work)

    @api.post("/gaps", tags=["gaps"])
    async def sentence_gaps(body: GapsRequest) -> dict[str, Any]:
        """What the memory lacks for these sentences, selected now (nothing is stored)."""
        from scoi.gaps import GapError, sentence_gaps as gaps_of

        sentences = service.check_batch(body.sentences)
        service.check_k(body.k)

        def work() -> dict[str, Any]:
            def run(sel):
                try:
                    return gaps_of(sel, sentences, scope=f"{len(sentences)} sentences", k=body.k,
                                   method=body.method, limit=body.limit)
                except GapError as e:
                    raise ApiError(400, str(e)) from None
            return service.selectors.run(body.src, body.tgt, run, wait_s=service.config.limits.timeout_s).to_dict()
        return await run_limited(service, work)

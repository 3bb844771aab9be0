"""Background exports of the episode list (``webui.studio.export_jobs``): start one for the
list's filters, watch its progress, download the file when it is done."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response

from webui.studio.episode_views import parse_listing
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.export_jobs import ExportJob, ExportJobs
from webui.studio.rendering import is_htmx, page_or_fragment
from webui.studio.state import studio_of
from webui.templating import url

__all__ = ["router"]

router = APIRouter()


def _jobs(request: Request) -> ExportJobs:
    return request.app.state.export_jobs


def _job(request: Request, job_id: str) -> ExportJob:
    job = _jobs(request).get(job_id)
    if job is None:
        raise NotFoundError("That export is no longer kept; start it again from the episode list.", what="export")
    return job


@router.post("/episodes/export/jobs", name="episodes_export_job")
async def start_export(request: Request) -> Response:
    form = await request.form()
    listing = parse_listing({k: str(v) for k, v in form.items() if isinstance(v, str)})
    if listing.errors:
        raise StudioError("Fix the filters first: " + "; ".join(f"{k}: {v}" for k, v in listing.errors.items()))
    studio = studio_of(request)
    job = _jobs(request).start(studio.store, listing.filters, studio.settings.data_dir / "exports")
    target = url(request, "episodes_export_job_page", job_id=job.id)
    if is_htmx(request):
        return page_or_fragment(request, "studio/export_job.html", "studio/_export_job.html", job=job, nav="episodes")
    return RedirectResponse(target, status_code=303)


@router.get("/episodes/export/jobs/{job_id}", name="episodes_export_job_page")
def export_job_page(request: Request, job_id: str) -> Response:
    return page_or_fragment(request, "studio/export_job.html", "studio/_export_job.html", job=_job(request, job_id),
                            nav="episodes")


@router.get("/episodes/export/jobs/{job_id}/file", name="episodes_export_job_file")
def export_job_file(request: Request, job_id: str) -> Response:
    job = _job(request, job_id)
    if not job.finished or job.error or not job.path.exists():
        raise StudioError("This export is not ready: " + (job.error or "still running"))
    return FileResponse(job.path, media_type="application/x-ndjson", filename="episodes.jsonl")

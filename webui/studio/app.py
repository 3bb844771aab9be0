"""``create_studio_app``: the studio's FastAPI app, its lifespan and its error pages.

    app = create_studio_app(load_settings({"data_dir": "/tmp/studio"}))
    uvicorn.run(app, host="127.0.0.1", port=8000)
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from openenv.core.errors import OpenEnvError
from openenv.core.origin_policy import OriginGuard
from openenv.recording import EpisodeStore, StoreFullError
from webui import assets
from webui.fragment_errors import describe
from webui.studio import mcp_play, web_view_play
from webui.studio.catalogue import Catalogue
from webui.studio.export_jobs import ExportJobs
from webui.studio.launcher import Launcher
from webui.studio.model_runs import Endpoints, ModelRuns, Takeovers
from webui.studio.offload import Offload, ReaderProcess
from webui.studio.play import PlaySessions
from webui.studio.rendering import error_page
from webui.studio.reruns import Reruns
from webui.studio.routes import (
    compare,
    envs,
    episodes,
    exports,
    forks,
    models,
    play,
    play_end,
    runs,
    sessions,
    tokens,
    transcript,
)
from webui.studio.security import NoFraming, TimingMiddleware, TokenGate, check_csrf, new_secret
from webui.studio.settings import StudioSettings, load_settings
from webui.studio.state import Studio

__all__ = ["add_routes", "create_studio_app"]

log = logging.getLogger("openenv.studio")
JOURNAL_RECOVERY_INTERVAL_S = 5.0
SWITCH_INTERVAL_S = 0.001


async def _static(request: Request, path: str) -> Response:
    return assets.static_response(path, request.query_params.get("v"))


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "healthy", "service": "openenv-studio"})


async def _recover_journals(store: EpisodeStore) -> None:
    """Every few seconds, commit the step journals of recording processes that died (their last
    ~0.1 s of steps would otherwise wait for the next store open)."""
    while True:
        await asyncio.sleep(JOURNAL_RECOVERY_INTERVAL_S)
        try:
            await asyncio.to_thread(store.recover_journals)
        except StoreFullError:  # no room yet: tried again in a few seconds, no traceback each time
            log.warning("step journals wait: the store's disk is full")
        except OpenEnvError:
            log.exception("recovering step journals failed")


def add_routes(app: FastAPI, settings: StudioSettings, csrf_secret: str) -> None:
    """Every studio route and error page on ``app`` (the studio's and its reader process's)."""
    app.state.csrf_secret = csrf_secret
    app.state.settings = settings
    app.state.origin_policy = settings.origin_policy()
    guard = [Depends(check_csrf)]
    app.include_router(envs.router, dependencies=guard)
    app.include_router(play.router, dependencies=guard)
    app.include_router(play_end.router, dependencies=guard)
    app.include_router(mcp_play.router, dependencies=guard)
    app.include_router(web_view_play.router, dependencies=guard)
    app.include_router(compare.router, dependencies=guard)  # before /episodes/{eid}
    app.include_router(exports.router, dependencies=guard)  # before /episodes/{eid}
    app.include_router(episodes.router, dependencies=guard)
    app.include_router(transcript.router, dependencies=guard)
    app.include_router(runs.router, dependencies=guard)
    app.include_router(tokens.router, dependencies=guard)
    app.include_router(forks.router, dependencies=guard)
    app.include_router(sessions.router, dependencies=guard)
    app.include_router(models.router, dependencies=guard)
    app.add_api_route("/health", _health, methods=["GET"], name="health", include_in_schema=False)
    app.add_api_route("/static/{path:path}", _static, methods=["GET", "HEAD"], name=assets.STATIC_ROUTE,
                      include_in_schema=False)

    async def _error(request: Request, exc: Exception) -> Response:
        status, title, message, code = describe(exc)
        if status >= 500 and not isinstance(exc, OpenEnvError):
            log.exception("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_page(request, status, title, message, code=code)

    for kind in (OpenEnvError, StarletteHTTPException, RequestValidationError, Exception):
        app.add_exception_handler(kind, _error)


def create_studio_app(settings: StudioSettings | None = None, *, reader_process: bool = False) -> FastAPI:
    """The studio app; settings default to ``load_settings()`` (environment + defaults).

    ``reader_process``: the heavy read-only pages (``webui.studio.offload.READ_PATHS``) are served
    by a second process, so their Python work never holds this process's GIL (``openenv studio``
    turns it on)."""
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # database reads and page rendering run in worker threads: hand the interpreter back to
        # the event loop every 1 ms (5 ms by default) so /health and small pages answer while
        # they run
        sys.setswitchinterval(float(os.environ.get("OPENENV_STUDIO_SWITCH_S", SWITCH_INTERVAL_S)))
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = EpisodeStore(settings.database_target)
        catalogue = Catalogue(settings.data_dir, docker=settings.docker, docker_host=settings.docker_host,
                              ray_address=settings.ray_address)
        launcher = Launcher(settings)
        studio = Studio(settings, store, catalogue, launcher, PlaySessions(store, idle_s=settings.play_idle_s),
                        Reruns(store))
        docker = await asyncio.to_thread(catalogue.docker, fresh=True)
        await asyncio.to_thread(launcher.readopt, studio.providers(docker))
        app.state.studio = studio
        app.state.model_endpoints = Endpoints(settings.data_dir)  # Run a model, takeover in Play
        app.state.model_runs, app.state.takeovers = ModelRuns(store, settings.data_dir), Takeovers()
        app.state.export_jobs = ExportJobs()
        recovery = asyncio.create_task(_recover_journals(store))
        app.state.reader = ReaderProcess(settings, app.state.csrf_secret).start() if reader_process else None
        try:
            yield
        finally:
            recovery.cancel()
            if app.state.reader is not None:
                await app.state.reader.close()
            app.state.export_jobs.close()
            await app.state.takeovers.close()
            await app.state.model_runs.close()
            await studio.reruns.close()
            await studio.plays.close_all()
            launcher.release()
            store.close()

    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    add_routes(app, settings, new_secret())
    if reader_process:  # innermost: after the token and origin checks, before any route
        app.add_middleware(Offload)
    app.add_middleware(TokenGate, token=settings.token)
    app.add_middleware(OriginGuard, policy=app.state.origin_policy)  # Host and Origin, before the token
    app.add_middleware(NoFraming)  # also on the 403s above
    app.add_middleware(TimingMiddleware)
    return app

"""Tiny ASGI apps for provider tests, served with ``uvicorn tests.containers.apps:<name>``."""

from __future__ import annotations

import os

from fastapi import FastAPI
from fastapi.responses import JSONResponse

ok = FastAPI()
unhealthy = FastAPI()


@ok.get("/health")
def health() -> dict[str, str]:
    return {"status": "healthy"}


@ok.get("/env")
def env(name: str) -> dict[str, str | None]:
    return {"value": os.environ.get(name)}


@unhealthy.get("/health")
def never_healthy() -> JSONResponse:
    print("health asked; answering 503", flush=True)
    return JSONResponse({"status": "starting"}, status_code=503)

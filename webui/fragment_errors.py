"""One error contract for htmx fragments, shared by the studio and an env's ``/web`` page.

An htmx request that fails answers a small ``.fragment-error`` notice with the ``X-Fragment-Error``
header. ``webui.js`` puts it into the *error slot* of the part that asked (the nearest
``[data-error-scope]``, form or panel around the asking element) instead of over the request's
target, so the target (``#observation``, a form with typed text) stays and later requests still
find it. The slot empties on that part's next success. Without the script, ``HX-Reswap:
innerHTML`` keeps the target element itself in place.

    status, title, message, code = describe(exc)
    return error_fragment(request, status, title, message, code=code)
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from openenv.core.errors import OpenEnvError
from webui.templating import render

__all__ = ["ERROR_HEADER", "code_status", "describe", "error_fragment", "is_fragment_request"]

ERROR_HEADER = "X-Fragment-Error"
FORM_TOO_LARGE = "Field exceeded maximum size"  # Starlette's form parser (1 MB per field)
CODE_STATUS = {
    "VALIDATION_ERROR": 422, "BAD_CURSOR": 422, "INVALID_JSON": 400, "STEP_BEFORE_RESET": 409, "ENV_BUSY": 409,
    "TIMEOUT": 504, "CAPACITY_REACHED": 503, "SESSION_ERROR": 410, "CONNECTION_LOST": 502,
}
TITLES = {400: "Invalid input", 403: "Refused", 404: "Not found", 405: "Not allowed", 409: "Conflict",
          410: "Gone", 413: "Too large", 422: "Invalid input", 502: "Environment error"}


def is_fragment_request(request: Request) -> bool:
    """An htmx request for a fragment (not a boosted page load)."""
    return request.headers.get("HX-Request") == "true" and request.headers.get("HX-Boosted") != "true"


def code_status(code: str, default: int = 502) -> int:
    """The HTTP status of an ``OpenEnvError`` code (``default`` for an environment's own failure)."""
    return CODE_STATUS.get(code, default)


def describe(exc: BaseException) -> tuple[int, str, str, str | None]:
    """``(status, title, message, code)`` of a failure; unexpected ones are a 500 without details."""
    if isinstance(exc, HTTPException):
        status = exc.status_code
        message = exc.detail if isinstance(exc.detail, str) else "The request could not be handled."
        if status == 400 and message.startswith(FORM_TOO_LARGE):
            status, message = 413, "A field is larger than the 1 MB limit; shorten it and try again."
        elif status == 404 and message == "Not Found":
            message = "There is nothing at this address."
        return status, TITLES.get(status, "Error"), message, None
    if isinstance(exc, RequestValidationError):
        details = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors())
        return 422, TITLES[422], details or "Invalid request.", None
    if isinstance(exc, OpenEnvError):
        status = getattr(type(exc), "status", None)
        status = status if isinstance(status, int) else code_status(exc.code)
        return status, TITLES.get(status, "Error"), exc.message, exc.code
    return 500, "Something went wrong", f"The server hit an unexpected {type(exc).__name__}; details are in its log.", None


def error_fragment(request: Request, status: int, title: str, message: str, *, code: str | None = None,
                   **ctx: Any) -> HTMLResponse:
    """The error notice for the asking part's error slot (see the module docstring)."""
    html = render("_error_fragment.html", request=request, status=status, title=title, message=message, code=code,
                  **ctx)
    return HTMLResponse(html, status_code=status, headers={ERROR_HEADER: "1", "HX-Reswap": "innerHTML"})

"""The one place that knows where templates and static files live, and how asset URLs are versioned.

In an installed wheel they sit inside the package (``webui/templates``, ``webui/static``: the
build maps the repository's top-level ``templates/`` and ``static/`` there); in a source checkout
they are the repository's top-level directories.
"""

from __future__ import annotations

import hashlib
import mimetypes
from functools import lru_cache
from pathlib import Path

from starlette.responses import FileResponse, PlainTextResponse, Response

_PACKAGE = Path(__file__).resolve().parent
HTMX_FILE = "vendor/htmx-2.0.11.min.js"
STATIC_ROUTE = "web_static"


def _locate(name: str) -> Path:
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"webui {name}/ directory not found next to {_PACKAGE}")


@lru_cache(maxsize=1)
def templates_dir() -> Path:
    """Directory holding the Jinja2 templates."""
    return _locate("templates")


@lru_cache(maxsize=1)
def static_dir() -> Path:
    """Directory holding CSS, JS and vendored assets."""
    return _locate("static")


@lru_cache(maxsize=256)
def content_hash(path: str) -> str:
    """First 12 hex digits of the SHA-256 of a static file ('' if it does not exist)."""
    file = _safe_path(path)
    if file is None:
        return ""
    return hashlib.sha256(file.read_bytes()).hexdigest()[:12]


def _safe_path(path: str) -> Path | None:
    root = static_dir()
    file = (root / path).resolve()
    if root not in file.parents or not file.is_file():
        return None
    return file


def static_response(path: str, version: str | None) -> Response:
    """Serve one static file; a URL carrying the current content hash is cached for a year."""
    file = _safe_path(path)
    if file is None:
        return PlainTextResponse("not found", status_code=404)
    immutable = bool(version) and version == content_hash(path)
    cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
    media = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    if media.startswith("text/") or media.endswith("javascript"):
        media += "; charset=utf-8"
    return FileResponse(file, media_type=media, headers={"Cache-Control": cache})

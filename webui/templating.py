"""The Jinja2 environment shared by the /web page and the studio: autoescape, URL helper, filters."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any

import jinja2
from starlette.requests import Request

from webui.assets import HTMX_FILE, STATIC_ROUTE, content_hash, templates_dir


def url(request: Request, name: str, /, **params: Any) -> str:
    """Path of the route ``name`` (relative to the host, honouring the ASGI root_path)."""
    path = request.app.url_path_for(name, **{k: str(v) for k, v in params.items()})
    return request.scope.get("root_path", "").rstrip("/") + str(path)


def asset_url(request: Request, path: str) -> str:
    """Content-hashed URL of a static asset."""
    return f"{url(request, STATIC_ROUTE, path=path)}?v={content_hash(path)}"


def _tojson_attr(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def format_number(v: Any) -> str:
    """A number as the pages show it (charts, tables, badges): integers whole (30000, never 3e+04),
    floats to 4 significant digits without exponent between 1e-4 and 1e15, ``—`` for none."""
    if v is None:
        return "—"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    size = abs(v)
    if size == 0:
        return "0"
    if size < 1e-4 or size >= 1e15:
        return f"{v:.4g}"
    digits = math.floor(math.log10(size)) + 1  # before the point
    text = f"{v:.{max(0, 4 - digits)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja2 environment (autoescape on, undefined variables are errors)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(url=url, asset_url=asset_url, htmx_path=HTMX_FILE)
    env.filters.update(tojson_attr=_tojson_attr, filesize=_size, num=format_number)
    return env


def render(template: str, /, **context: Any) -> str:
    """Render a template by name."""
    return environment().get_template(template).render(**context)

"""Add a router's routes to an app as the app's own routes.

Since FastAPI 0.140, ``app.include_router`` keeps an included router as one opaque
``_IncludedRouter`` entry of ``app.routes``: code that lists ``app.routes`` (an author's test
``assert "/reset" not in [r.path for r in app.routes]``, OpenTelemetry or Prometheus route naming)
then sees none of the environment's endpoints. 0.10 registers its endpoints on the app directly;
so do we. Our routers carry no prefix, dependencies or tags of their own beyond what their routes
already hold, so appending the routes is what ``include_router`` did before.
"""

from __future__ import annotations

from typing import Any

__all__ = ["add_routes"]


def add_routes(app: Any, router: Any) -> None:
    """Append ``router``'s routes (paths, methods, schema flags and tags already set) to ``app``."""
    app.router.routes.extend(router.routes)

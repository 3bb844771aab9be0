"""``app.routes`` lists the environment's endpoints, as on 0.10 (FastAPI >= 0.140 hides routers
added with ``include_router`` behind one ``_IncludedRouter`` entry with no path): every route the
published 0.10 lists is listed by ours, and production mode lists no ``/reset``, ``/step``, ``/state``."""

from __future__ import annotations

import json
import sys

from tests.peer010 import PEERS010, peer010_python, run_with

PROBE = PEERS010 / "clients" / "routes_probe.py"


def _apps(python: str) -> dict[str, set[tuple[str, str]]]:
    done = run_with(python, PROBE)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {row["app"]: {tuple(r) for r in row["routes"]} for row in rows}


def test_app_routes_list_every_010_endpoint() -> None:
    ours, theirs = _apps(sys.executable), _apps(peer010_python())
    assert set(ours) == set(theirs) == {"create_fastapi_app", "create_app", "production", "register_routes"}
    for name, routes in theirs.items():
        assert routes <= ours[name], (name, sorted(routes - ours[name]))
    for path in ("/reset", "/step", "/state"):
        assert ("HTTP", path) in ours["create_fastapi_app"] and ("HTTP", path) in ours["register_routes"]
        assert not any(p == path for _, p in ours["production"])
    assert ("WS", "/ws") in ours["production"] and ("HTTP", "/mcp") in ours["production"]

"""Server time of the /web page and its step fragments for a ~1 MB observation.

Run: ``.venv/bin/python bench/web_render.py [--mb 1.0] [--repeat 30]``

Requests go through the ASGI app in-process (no socket), so the times are the server's own:
routing, the env call, view building and template rendering. ``render only`` isolates the
observation fragment's view building + Jinja rendering.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import time
from typing import Any, ClassVar

import httpx
from pydantic import Field

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation

HX = {"HX-Request": "true"}


class BigAction(Action):
    text: str = Field("go", description="Anything")
    size: int = Field(1, ge=1, le=10)


class BigObservation(Observation):
    log: str = ""
    image: str = ""
    rows: list[dict[str, Any]] = []


def big_observation(mb: float) -> BigObservation:
    """About ``mb`` megabytes: 45% text, 35% base64 PNG-looking image, 20% JSON rows."""
    total = int(mb * 1024 * 1024)
    log = "\n".join(f"line {i}: " + "x" * 60 for i in range(int(total * 0.45) // 70))
    image = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(int(total * 0.35 * 3 / 4))).decode()
    rows = [{"i": i, "name": f"row-{i}", "ok": i % 2 == 0} for i in range(int(total * 0.2) // 40)]
    return BigObservation(log=log, image=image, rows=rows, reward=1.0)


class BigEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True
    OBS: ClassVar[BigObservation | None] = None

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> BigObservation:
        return self.OBS or BigObservation()

    def step(self, action: BigAction, timeout_s: float | None = None, **kwargs: Any) -> BigObservation:
        return self.OBS or BigObservation()


def _stats(name: str, samples: list[float], size: int) -> str:
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return f"{name:<34} median {statistics.median(samples):7.1f} ms   p95 {p95:7.1f} ms   body {size / 1024:8.0f} KB"


async def _time(call: Any, repeat: int) -> tuple[list[float], int]:
    out, size = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        resp = await call()
        out.append((time.perf_counter() - start) * 1000)
        assert resp.status_code == 200, resp.text[:500]
        size = len(resp.content)
    return out, size


async def main(mb: float, repeat: int) -> None:
    BigEnv.OBS = big_observation(mb)
    payload_kb = len(BigEnv.OBS.model_dump_json()) / 1024
    app = create_app(BigEnv, BigAction, BigObservation, env_name="big", max_concurrent_envs=64)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        page = await client.get("/web")
        sid = page.text.split('data-session="', 1)[1].split('"', 1)[0]
        form = {"mode": "form", "a.text": "go", "a.size": "1"}
        await client.post(f"/web/s/{sid}/reset", data={}, headers=HX)
        await client.post(f"/web/s/{sid}/step", data=form, headers=HX)
        lines = [f"observation: {payload_kb:.0f} KB of JSON; {repeat} runs each"]
        runs = {
            "GET /web (new tab, page)": lambda: client.get("/web"),
            "POST step (htmx fragment)": lambda: client.post(f"/web/s/{sid}/step", data=form, headers=HX),
            "POST step (no htmx: full page)": lambda: client.post(f"/web/s/{sid}/step", data=form),
            "GET history item (fragment)": lambda: client.get(f"/web/s/{sid}/history/{1 + 2 * repeat}", headers=HX),
            "GET state (fragment)": lambda: client.get(f"/web/s/{sid}/state", headers=HX),
        }
        for name, call in runs.items():
            samples, size = await _time(call, repeat)
            lines.append(_stats(name, samples, size))
        lines.append(_render_only(app, repeat))
    print("\n".join(lines))


def _render_only(app: Any, repeat: int) -> str:
    from starlette.requests import Request

    from openenv.core.env_server.serialization import observation_to_wire
    from webui.env_page import EnvPage
    from webui.templating import render

    page = EnvPage(app.state.env_server)
    ws = page.tabs.add("bench")
    ws.record("step", {"text": "go"}, observation_to_wire(BigEnv.OBS), 1.0)
    request = Request({"type": "http", "app": app, "router": app.router, "root_path": "", "headers": []})
    samples = []
    size = 0
    for _ in range(repeat):
        start = time.perf_counter()
        obs = page.views.observation(request, ws, None, None)
        ctx = page._ctx(request, ws, obs=obs, oob=True, current=obs.record.index)
        html = render("_observation.html", **ctx) + render("_history.html", **ctx)
        samples.append((time.perf_counter() - start) * 1000)
        size = len(html)
    return _stats("render only (obs + history)", samples, size)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="observation size in MB")
    parser.add_argument("--repeat", type=int, default=30, help="runs per measurement")
    args = parser.parse_args()
    asyncio.run(main(args.mb, args.repeat))

"""The REPL app's lifespan: workers' pipes run on the server's own event loop.

Without it every cell crosses two threads (the server loop hands the cell to the
background sandbox loop, which hands the reply back); each hand-off is a thread wake-up,
which costs most after an agent's think time, when every thread sleeps. With it the
server's loop writes the cell to the worker and reads its reply itself. At shutdown,
after the server has closed its sessions, warm workers are retired and later callers
get a background loop again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from openenv.envs.repl import pool
from openenv.envs.repl.loop import adopt_running_loop, release_adopted_loop

SHUTDOWN_WAIT_S = 10.0

__all__ = ["run_sandboxes_on_server_loop"]


def run_sandboxes_on_server_loop(app: Any) -> None:
    """Wrap ``app``'s lifespan so the server's loop is the sandbox loop while it serves."""
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        loop = asyncio.get_running_loop()
        adopted = adopt_running_loop(background_unused=_no_worker_started())
        try:
            async with inner(a) as state:  # the server's own lifespan closes every session on exit
                yield state
        finally:
            if adopted:
                await _wind_down()
                release_adopted_loop(loop)

    app.router.lifespan_context = lifespan


def _no_worker_started() -> bool:
    """No sandbox, warm worker or worker being started exists (e.g. only a probe env was closed)."""
    return not list(pool.live_sandboxes) and not pool.POOL.idle and not pool.POOL.filling


async def _wind_down() -> None:
    """Retire warm workers and finish background clean-ups that belong to this loop."""
    pool.POOL.flush()  # a worker still starting retires itself once ready (the pool has no limits now)
    if pool.POOL.filling:
        await asyncio.wait(list(pool.POOL.filling), timeout=SHUTDOWN_WAIT_S)
    for box in list(pool.live_sandboxes):
        await box.close()
    pending = [f for f in pool.background_tasks() if not f.done()]
    if pending:
        await asyncio.wait(pending, timeout=SHUTDOWN_WAIT_S)

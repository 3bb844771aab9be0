"""Re-runs as background jobs: a long episode's re-run is polled by a status fragment."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from openenv.core import GenericEnvClient, OpenEnvError
from openenv.recording import EpisodeStore, RerunReport, rerun

__all__ = ["RerunJob", "Reruns"]

MAX_JOBS = 100
INLINE_WAIT_S = 2.0  # a re-run finishing within this answers the POST directly


@dataclass(eq=False)
class RerunJob:
    id: str
    episode_id: str
    runtime_name: str
    base_url: str
    started_at: float = field(default_factory=time.time)
    report: RerunReport | None = None
    error: str = ""
    task: asyncio.Task[None] | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # the runtime's (a bearer token)

    @property
    def running(self) -> bool:
        return self.report is None and not self.error


class Reruns:
    """Recent re-run jobs (bounded), each on a fresh env session."""

    def __init__(self, store: EpisodeStore, *, inline_wait_s: float = INLINE_WAIT_S) -> None:
        self.store = store
        self.inline_wait_s = inline_wait_s
        self._jobs: OrderedDict[str, RerunJob] = OrderedDict()

    async def start(
        self,
        episode_id: str,
        runtime_name: str,
        base_url: str,
        *,
        ready: Callable[[], Awaitable[str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> RerunJob:
        """Start a re-run; waits up to ``inline_wait_s`` so short ones come back finished.

        ``ready``: for an env still starting, waits until it serves and returns its URL (or raises
        ``OpenEnvError`` with why it did not start); the job reports "starting" until then."""
        job = RerunJob(uuid.uuid4().hex[:12], episode_id, runtime_name, base_url, headers=dict(headers or {}))
        job.task = asyncio.create_task(self._run(job, ready))
        self._jobs[job.id] = job
        while len(self._jobs) > MAX_JOBS:
            _, old = self._jobs.popitem(last=False)
            if old.task is not None and not old.task.done():
                old.task.cancel()
        await asyncio.wait({job.task}, timeout=self.inline_wait_s)
        return job

    async def _run(self, job: RerunJob, ready: Callable[[], Awaitable[str]] | None) -> None:
        try:
            if ready is not None:
                job.base_url = await ready()
            async with GenericEnvClient(base_url=job.base_url, headers=job.headers) as client:
                job.report = await rerun(self.store, job.episode_id, client)
        except OpenEnvError as exc:
            job.error = exc.message

    def get(self, job_id: str) -> RerunJob | None:
        return self._jobs.get(job_id)

    async def close(self) -> None:
        for job in self._jobs.values():
            if job.task is not None and not job.task.done():
                job.task.cancel()
        tasks = [j.task for j in self._jobs.values() if j.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)

"""Background exports: a large JSONL export written to a file in a worker thread, its progress
polled by the page, the file downloaded when it is done (the direct export streams instead).

    job = jobs.start(store, filters, directory)
    job.done, job.total, job.finished, job.error, job.path
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv.core.errors import OpenEnvError
from openenv.recording.bulk_export import iter_episode_batches
from openenv.recording.jsonable import dumps

__all__ = ["ExportJob", "ExportJobs"]

MAX_JOBS = 20


@dataclass
class ExportJob:
    id: str
    path: Path
    total: int | None = None
    done: int = 0
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    error: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def finished(self) -> bool:
        return self.ended_at is not None

    @property
    def rate(self) -> float | None:
        elapsed = (self.ended_at or time.time()) - self.started_at
        return self.done / elapsed if elapsed > 0 else None


class ExportJobs:
    """The studio's background exports (the last ``MAX_JOBS``; an evicted job's file is deleted)."""

    def __init__(self) -> None:
        self._jobs: dict[str, ExportJob] = {}
        self._lock = threading.Lock()

    def start(self, store: Any, filters: Any, directory: Path) -> ExportJob:
        directory.mkdir(parents=True, exist_ok=True)
        job = ExportJob(id=uuid.uuid4().hex[:12], path=directory / f"export-{uuid.uuid4().hex[:12]}.jsonl")
        with self._lock:
            while len(self._jobs) >= MAX_JOBS:
                old = self._jobs.pop(next(iter(self._jobs)))
                old.cancel.set()
                old.path.unlink(missing_ok=True)
            self._jobs[job.id] = job
        threading.Thread(target=self._run, args=(job, store, filters), name=f"export-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: str) -> ExportJob | None:
        return self._jobs.get(job_id)

    def close(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                job.cancel.set()
                if not job.finished:
                    job.path.unlink(missing_ok=True)

    @staticmethod
    def _run(job: ExportJob, store: Any, filters: Any) -> None:
        try:
            job.total = store.count_episodes(filters)
            with open(job.path, "w", encoding="utf-8") as fh:
                for batch in iter_episode_batches(store, filters=filters):
                    if job.cancel.is_set():
                        raise InterruptedError("cancelled")
                    fh.write("".join(dumps(obj) + "\n" for obj in batch))
                    job.done += len(batch)
        except (OpenEnvError, OSError, InterruptedError) as exc:
            job.error = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            job.path.unlink(missing_ok=True)
        finally:
            job.ended_at = time.time()

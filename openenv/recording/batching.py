"""Group commit for async recorders: steps finished in the same event-loop turn share one
transaction, and each ``step()`` still returns only after its own row has committed.

When no other recording session on the loop is mid-step (a single session), the row is
written at once, with no loop turn added; with many concurrent sessions on one loop it waits one
loop turn and turns N commits into one (fewer lock round trips and WAL pages per step).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from .errors import RecordingError
from .store import EpisodeStore

__all__ = ["StepBatcher", "batcher_for"]

_batchers: weakref.WeakKeyDictionary[EpisodeStore, weakref.WeakKeyDictionary[Any, StepBatcher]] = (
    weakref.WeakKeyDictionary()
)


class StepBatcher:
    """Collects step rows during one loop turn and commits them together."""

    def __init__(self, store: EpisodeStore, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.loop = loop
        self._pending: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self.in_flight = 0  # recording sessions waiting for a step reply right now

    async def append(self, row: dict[str, Any]) -> None:
        """Commit ``row``; returns once it is committed (raises its error)."""
        if self.in_flight == 0 and not self._pending:
            self.store.append_steps([row])  # nobody to share a commit with
            return
        future: asyncio.Future[None] = self.loop.create_future()
        if not self._pending:
            self.loop.call_soon(self._flush)
        self._pending.append((row, future))
        await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        try:
            self.store.append_steps([row for row, _ in batch])
        except RecordingError as exc:
            if len(batch) == 1:
                _settle(batch[0][1], exc)
                return
            for row, future in batch:  # one bad row must not fail its neighbours
                try:
                    self.store.append_steps([row])
                except RecordingError as one:
                    _settle(future, one)
                else:
                    _settle(future, None)
            return
        for _, future in batch:
            _settle(future, None)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # the awaiting step was cancelled; its row is written all the same
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


def batcher_for(store: EpisodeStore) -> StepBatcher:
    """The batcher of ``store`` on the running loop."""
    loop = asyncio.get_running_loop()
    per_loop = _batchers.setdefault(store, weakref.WeakKeyDictionary())
    batcher = per_loop.get(loop)
    if batcher is None:
        batcher = per_loop[loop] = StepBatcher(store, loop)
    return batcher

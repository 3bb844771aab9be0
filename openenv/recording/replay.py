"""``Replay``: walk a stored episode step by step, a page of steps loaded at a time.

replay = Replay(store, episode_id)
len(replay)                 # stored steps, the reset included
replay[3].observation       # step 3 (loads the page holding it)
replay.changes(3)           # Diff of the observation from step 2 to step 3
for step in replay: ...     # every step, in order
"""

from __future__ import annotations

from collections.abc import Iterator

from .diff import Diff, diff
from .records import EpisodeRecord, StepRecord
from .store import EpisodeStore

__all__ = ["Replay"]


class Replay:
    """Random and sequential access to one episode's steps, ``page`` steps per query."""

    def __init__(self, store: EpisodeStore, episode_id: str, *, page: int = 200) -> None:
        self.store = store
        self.episode: EpisodeRecord = store.get_episode(episode_id)
        self.page = max(1, page)
        self._start = -1
        self._steps: list[StepRecord] = []

    def __len__(self) -> int:
        return self.episode.step_count + 1

    def __getitem__(self, index: int) -> StepRecord:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"step {index} is outside 0..{len(self) - 1}")
        if not self._start <= index < self._start + len(self._steps):
            self._start = index - index % self.page
            self._steps = self.store.load_steps(self.episode.id, start=self._start, limit=self.page)
            if not self._steps or self._steps[0].index != self._start:
                raise IndexError(f"step {index} of episode {self.episode.id} is not stored")
        return self._steps[index - self._start]

    def __iter__(self) -> Iterator[StepRecord]:
        return self.store.iter_steps(self.episode.id, batch=self.page)

    def changes(self, index: int) -> Diff:
        """What the observation of step ``index`` changed from the step before (vs nothing at 0)."""
        after = self[index].observation
        before = self[index - 1].observation if index > 0 else {}
        return diff(before, after)

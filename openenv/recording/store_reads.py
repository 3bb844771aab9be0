"""The read methods of ``EpisodeStore``: each one query of ``queries.py`` on a pooled connection
(reads never block the single writer under WAL)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy.engine import Engine

from . import queries
from .engine import guarded
from .records import EpisodePage, EpisodeRecord, StepRecord

__all__ = ["EpisodeReadsMixin"]


class EpisodeReadsMixin:
    """Listing, one episode, its steps and forks; ``self.engine`` is the store's engine."""

    engine: Engine

    def list_episodes(
        self, filters: queries.EpisodeFilter | None = None, *, limit: int = 50, cursor: str | None = None,
        sort: str = "started", descending: bool = True,
    ) -> EpisodePage:
        """One page of episodes, newest first or in another ``queries.SORTS`` order (keyset
        pagination, no COUNT)."""
        with guarded("list episodes"), self.engine.connect() as conn:
            return queries.list_episodes(conn, filters or queries.EpisodeFilter(), limit=limit, cursor=cursor,
                                         sort=sort, descending=descending)

    def count_episodes(self, filters: queries.EpisodeFilter | None = None) -> int:
        """How many episodes match (a COUNT: use for totals, not for every page)."""
        with guarded("count episodes"), self.engine.connect() as conn:
            return queries.count_episodes(conn, filters or queries.EpisodeFilter())

    def get_episode(self, episode_id: str) -> EpisodeRecord:
        """The episode with its run, tags and reset kwargs; raises ``EpisodeNotFoundError``."""
        with guarded("load episode"), self.engine.connect() as conn:
            return queries.get_episode(conn, episode_id)

    def load_steps(self, episode_id: str, *, start: int = 0, limit: int | None = None) -> list[StepRecord]:
        """Steps ``start..start+limit`` of an episode, in order."""
        with guarded("load steps"), self.engine.connect() as conn:
            return queries.load_steps(conn, episode_id, start=start, limit=limit)

    def load_rewards(self, episode_id: str) -> list[float | None]:
        """Every step's reward in index order (index 0 is the reset), wherever the step is kept."""
        with guarded("load rewards"), self.engine.connect() as conn:
            return queries.load_rewards(conn, episode_id)

    def list_forks(self, episode_id: str, *, limit: int = 100) -> list[EpisodeRecord]:
        """Episodes forked from ``episode_id``, oldest first."""
        with guarded("list forks"), self.engine.connect() as conn:
            return queries.list_forks(conn, episode_id, limit=limit)

    def distinct_values(self, facet: str, *, limit: int = 500) -> list[str]:
        """Distinct values of ``env``, ``source``, ``label`` or ``tag`` (filter menus)."""
        with guarded("list values"), self.engine.connect() as conn:
            return queries.distinct_values(conn, facet, limit)

    def resolve_id(self, prefix: str) -> str:
        """The one episode id starting with ``prefix`` (ids are shown shortened)."""
        with guarded("find episode"), self.engine.connect() as conn:
            return queries.resolve_id(conn, prefix)

    def iter_steps(self, episode_id: str, *, batch: int = 1000) -> Iterator[StepRecord]:
        """Every step of an episode, fetched ``batch`` at a time (replay)."""
        start = 0
        while True:
            page = self.load_steps(episode_id, start=start, limit=batch)
            yield from page
            if len(page) < batch:
                return
            start = page[-1].index + 1

    def iter_episodes(
        self, filters: queries.EpisodeFilter | None = None, *, batch: int = 200
    ) -> Iterator[EpisodeRecord]:
        """Every matching episode, newest first, page by page."""
        cursor: str | None = None
        while True:
            page = self.list_episodes(filters, limit=batch, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

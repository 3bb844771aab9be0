"""Streaming export to JSONL and import back (one episode per line, steps nested).

    with open("episodes.jsonl", "w") as f:
        export_jsonl(store, f, filters=EpisodeFilter(env="echo"), on_progress=print)
    import_jsonl(other_store, "episodes.jsonl")

Exports hold one episode in memory at a time; ``on_progress(done, total)`` is called after each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from .episode_format import Conflict, episode_to_dict, insert_episode, validate
from .errors import ExportFormatError
from .jsonable import dumps
from .queries import EpisodeFilter
from .store import EpisodeStore

__all__ = ["ImportResult", "export_jsonl", "import_jsonl", "iter_episode_dicts", "load_episode_dicts"]

Progress = Callable[[int, int | None], None]


@dataclass(frozen=True)
class ImportResult:
    imported: int
    skipped: int


def iter_episode_dicts(
    store: EpisodeStore,
    *,
    filters: EpisodeFilter | None = None,
    episode_ids: Iterable[str] | None = None,
    on_progress: Progress | None = None,
) -> Iterator[dict[str, Any]]:
    """Exchange dicts for the chosen episodes (ids, else the filter; newest first)."""
    if episode_ids is not None:
        ids = list(episode_ids)
        total: int | None = len(ids)
        source: Iterable[str] = ids
    else:
        total = store.count_episodes(filters)
        source = (e.id for e in store.iter_episodes(filters))
    for done, eid in enumerate(source, 1):
        steps = list(store.iter_steps(eid))
        yield episode_to_dict(store.get_episode(eid), steps, failed_turn(store, eid, steps))
        if on_progress is not None:
            on_progress(done, total)


def failed_turn(store: EpisodeStore, episode_id: str, steps: list[Any]) -> dict[str, Any] | None:
    """The recorded turn after an episode's last step (a model reply that never became an action)."""
    after = (steps[-1].index + 1) if steps else 0
    turns = store.load_turns(episode_id, start=after)
    if not turns:
        return None
    index = min(turns)
    return {"index": index, "actor": turns[index][0], "agent": turns[index][1]}


def export_jsonl(
    store: EpisodeStore,
    dest: str | Path | IO[str],
    *,
    filters: EpisodeFilter | None = None,
    episode_ids: Iterable[str] | None = None,
    on_progress: Progress | None = None,
) -> int:
    """Write one JSON object per line; returns how many episodes were written."""
    if isinstance(dest, (str, Path)):
        with open(dest, "w", encoding="utf-8") as f:
            return export_jsonl(store, f, filters=filters, episode_ids=episode_ids, on_progress=on_progress)
    n = 0
    for obj in iter_episode_dicts(store, filters=filters, episode_ids=episode_ids, on_progress=on_progress):
        dest.write(dumps(obj))
        dest.write("\n")
        n += 1
    return n


def _lines(src: IO[str] | IO[bytes]) -> Iterator[dict[str, Any]]:
    """Validated episodes, line by line (bytes lines: orjson checks each one's UTF-8)."""
    lineno = 0
    while True:
        try:
            line = src.readline()
        except UnicodeDecodeError as exc:  # a text stream decodes ahead: the line number is approximate
            raise ExportFormatError(f"near line {lineno + 1}: not UTF-8 text ({exc.reason})", line=lineno + 1) from None
        if not line:
            return
        lineno += 1
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ExportFormatError(f"line {lineno}: not JSON ({exc.msg})", line=lineno) from exc
        yield validate(obj, f"line {lineno}")


def load_episode_dicts(
    store: EpisodeStore,
    dicts: Iterable[dict[str, Any]],
    *,
    on_conflict: Conflict = "skip",
    on_progress: Progress | None = None,
    total: int | None = None,
) -> ImportResult:
    """Insert validated exchange dicts, one transaction per episode."""
    imported = skipped = 0
    for obj in dicts:
        if store.write(
            lambda c, o=obj: insert_episode(c, o, on_conflict), what=f"import episode {obj['id']}"
        ):
            imported += 1
        else:
            skipped += 1
        if on_progress is not None:
            on_progress(imported + skipped, total)
    return ImportResult(imported=imported, skipped=skipped)


def import_jsonl(
    store: EpisodeStore,
    src: str | Path | IO[str] | IO[bytes],
    *,
    on_conflict: Conflict = "skip",
    on_progress: Progress | None = None,
) -> ImportResult:
    """Read episodes written by ``export_jsonl`` (text or binary stream); episodes before a bad
    line stay imported, and a bad line (not JSON, not UTF-8, a wrong field) names its number."""
    if isinstance(src, (str, Path)):
        with open(src, "rb") as f:
            return import_jsonl(store, f, on_conflict=on_conflict, on_progress=on_progress)
    return load_episode_dicts(store, _lines(src), on_conflict=on_conflict, on_progress=on_progress)

"""Parquet export/import (the ``parquet`` extra: pyarrow), readable by Hugging Face ``datasets``.

One row per episode; ``steps`` is a list of structs. Free-form JSON values (actions,
observations, metadata, states, reset kwargs, run info) are JSON strings, so every file has one
fixed Arrow schema whatever the environment. ``datasets.load_dataset("parquet", data_files=...)``
reads it as is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from .episode_format import FORMAT, FORMAT_VERSION, Conflict, validate
from .errors import ExportFormatError, MissingExtraError
from .jsonable import dumps, loads
from .queries import EpisodeFilter
from .store import EpisodeStore
from .transfer import ImportResult, Progress, iter_episode_dicts, load_episode_dicts

__all__ = ["export_parquet", "import_parquet", "parquet_schema"]

_JSON_STEP = ("action", "observation", "metadata", "state", "agent")
_BATCH = 64


def _pa() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401 - loads the submodule
    except ImportError as exc:
        raise MissingExtraError(
            "Parquet needs pyarrow: pip install pyarrow", extra="parquet"
        ) from exc
    return pyarrow


def parquet_schema() -> Any:
    """The Arrow schema of an episode file."""
    pa = _pa()
    step = pa.struct([
        ("index", pa.int64()), ("action", pa.string()), ("observation", pa.string()),
        ("reward", pa.float64()), ("done", pa.bool_()), ("metadata", pa.string()),
        ("latency_ms", pa.float64()), ("t", pa.float64()), ("state", pa.string()),
        ("actor", pa.string()), ("agent", pa.string()),
    ])  # fmt: skip
    return pa.schema([
        ("format_version", pa.int32()), ("id", pa.string()), ("env_name", pa.string()),
        ("source", pa.string()), ("label", pa.string()), ("seed", pa.int64()),
        ("reset_kwargs", pa.string()), ("started_at", pa.float64()), ("ended_at", pa.float64()),
        ("end_reason", pa.string()), ("step_count", pa.int64()), ("total_reward", pa.float64()),
        ("done", pa.bool_()), ("notes", pa.string()), ("tags", pa.list_(pa.string())),
        ("run", pa.string()), ("steps", pa.list_(step)), ("failed_turn", pa.string()),
        ("parent_episode_id", pa.string()), ("fork_step", pa.int64()),  # schema 3 (forks); absent in older files
        ("training_run_id", pa.string()), ("train_step", pa.int64()), ("group_id", pa.string()),
        ("group_index", pa.int64()), ("finish_reason", pa.string()), ("trainer_reward", pa.float64()),
        ("reward_components", pa.string()), ("advantage", pa.float64()),  # schema 5; absent in older files
        ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),  # schema 6; absent in older files
    ])  # fmt: skip


def _json(value: Any) -> str | None:
    return None if value is None else dumps(value)


def _to_row(obj: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in obj.items() if k not in ("format", "steps", "run", "reset_kwargs")}
    row["reset_kwargs"] = _json(obj["reset_kwargs"])
    row["run"] = _json(obj["run"])
    row["steps"] = [{**s, **{k: _json(s.get(k)) for k in _JSON_STEP}} for s in obj["steps"]]
    row["failed_turn"] = _json(obj.get("failed_turn"))
    row["reward_components"] = _json(obj.get("reward_components"))
    return row


def _from_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        obj = dict(row, format=FORMAT)
        raw = row["reset_kwargs"]  # null: the episode started without a reset
        obj["reset_kwargs"] = None if raw is None else loads(raw)
        obj["run"] = loads(row["run"] or "{}")
        obj["steps"] = [
            {**s, **{k: None if s.get(k) is None else loads(s[k]) for k in _JSON_STEP}}
            for s in row.get("steps") or []
        ]
        obj["failed_turn"] = loads(row["failed_turn"]) if row.get("failed_turn") else None
        obj["reward_components"] = loads(row["reward_components"]) if row.get("reward_components") else None
    except (KeyError, TypeError, ValueError, AttributeError, orjson.JSONDecodeError) as exc:
        raise ExportFormatError(f"{where}: unreadable episode row, a column has the wrong type ({exc})") from exc
    return validate(obj, where)


def export_parquet(
    store: EpisodeStore,
    dest: str | Path,
    *,
    filters: EpisodeFilter | None = None,
    episode_ids: Iterable[str] | None = None,
    on_progress: Progress | None = None,
) -> int:
    """Write the chosen episodes to a Parquet file, ``_BATCH`` episodes per row group."""
    pa = _pa()
    schema = parquet_schema()
    n = 0
    with pa.parquet.ParquetWriter(str(dest), schema) as writer:
        batch: list[dict[str, Any]] = []
        for obj in iter_episode_dicts(
            store, filters=filters, episode_ids=episode_ids, on_progress=on_progress
        ):
            batch.append(_to_row(obj))
            n += 1
            if len(batch) >= _BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or n == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return n


def _rows(path: str | Path) -> Iterator[dict[str, Any]]:
    pa = _pa()
    try:
        pf = pa.parquet.ParquetFile(str(path))
    except (OSError, pa.ArrowException) as exc:
        raise ExportFormatError(f"{path}: not a readable Parquet file ({exc})") from exc
    n = 0
    for batch in pf.iter_batches(batch_size=_BATCH):
        for row in batch.to_pylist():
            n += 1
            version = row.get("format_version") or 0
            if not isinstance(version, int) or isinstance(version, bool):
                raise ExportFormatError(f"row {n}: column 'format_version' has the wrong type ({type(version).__name__})")
            if version > FORMAT_VERSION:
                raise ExportFormatError(f"row {n}: format_version {version} is too new")
            yield _from_row(row, f"row {n}")


def import_parquet(
    store: EpisodeStore,
    src: str | Path,
    *,
    on_conflict: Conflict = "skip",
    on_progress: Progress | None = None,
) -> ImportResult:
    """Read episodes written by ``export_parquet``."""
    return load_episode_dicts(store, _rows(src), on_conflict=on_conflict, on_progress=on_progress)

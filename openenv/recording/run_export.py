"""A training run as a table: one row per rollout, ordered by training step, group and index.

Columns: ``run_id, run_name, step, group, index, episode_id, env_name, seed, trainer_reward,
reward_components`` (JSON text), ``advantage, finish_reason, env_return, env_steps, started_at,
ended_at, end_reason, prompt, completion, tool_calls`` (JSON text: messages and calls as
recorded) and, where the trainer or the capture proxy had them, the token arrays ``prompt_ids,
completion_ids, logprobs, loss_mask``. The model side comes from the rollout's model turn (the
one ``openenv.training`` records; else the episode's last model turn).

JSONL (one object per line) or Parquet (the ``parquet`` extra), readable by ``datasets``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from .errors import MissingExtraError
from .jsonable import dumps
from .queries import EpisodeFilter
from .store import EpisodeStore

__all__ = ["COLUMNS", "export_run", "iter_run_rows"]

COLUMNS = ("run_id", "run_name", "step", "group", "index", "episode_id", "env_name", "seed", "trainer_reward",
           "reward_components", "advantage", "finish_reason", "env_return", "env_steps", "started_at", "ended_at",
           "end_reason", "prompt", "completion", "tool_calls", "prompt_ids", "completion_ids", "logprobs",
           "loss_mask")  # fmt: skip
_BATCH = 256


def _model_turn(store: EpisodeStore, episode_id: str) -> dict[str, Any]:
    turns = [d for _, (actor, d) in sorted(store.load_turns(episode_id).items()) if actor == "model" and d]
    for data in turns:
        if data.get("trainer"):
            return data
    return turns[-1] if turns else {}


def _json(value: Any) -> str | None:
    return None if value is None else dumps(value)


def _group_key(group: str | None) -> tuple[int, Any]:
    if group is None:
        return (2, "")
    return (0, int(group)) if group.isdigit() else (1, group)


def iter_run_rows(store: EpisodeStore, run_ref: str) -> Iterator[dict[str, Any]]:
    """The rows of run ``run_ref`` (id, id prefix or name), step by step."""
    run = store.get_training_run(run_ref)
    for summary in store.training_steps(run.id):
        step = summary.step
        flt = (EpisodeFilter(training_run_id=run.id, step_min=step, step_max=step) if step is not None
               else EpisodeFilter(training_run_id=run.id))  # fmt: skip
        episodes = [e for e in store.iter_episodes(flt) if e.train_step == step]
        episodes.sort(key=lambda e: (_group_key(e.group_id), e.group_index if e.group_index is not None else -1,
                                     e.started_at))  # fmt: skip
        for e in episodes:
            turn = _model_turn(store, e.id)
            cap = turn.get("capture") or {}
            prompt = turn.get("prompt", turn.get("messages"))
            yield {
                "run_id": run.id, "run_name": run.name, "step": e.train_step, "group": e.group_id,
                "index": e.group_index, "episode_id": e.id, "env_name": e.env_name, "seed": e.seed,
                "trainer_reward": e.trainer_reward, "reward_components": _json(e.reward_components),
                "advantage": e.advantage, "finish_reason": e.finish_reason, "env_return": e.total_reward,
                "env_steps": e.step_count, "started_at": e.started_at, "ended_at": e.ended_at,
                "end_reason": e.end_reason, "prompt": _json(prompt),
                "completion": turn.get("completion") if isinstance(turn.get("completion"), str) else _json(turn.get("completion")),
                "tool_calls": _json(turn.get("tool_calls")), "prompt_ids": cap.get("prompt_ids"),
                "completion_ids": cap.get("sampled_ids"), "logprobs": cap.get("logprobs"),
                "loss_mask": cap.get("loss_mask"),
            }  # fmt: skip


def _schema(pa: Any) -> Any:
    ints, floats = pa.list_(pa.int64()), pa.list_(pa.float32())
    types = {"step": pa.int64(), "index": pa.int64(), "seed": pa.int64(), "trainer_reward": pa.float64(),
             "advantage": pa.float64(), "env_return": pa.float64(), "env_steps": pa.int64(),
             "started_at": pa.float64(), "ended_at": pa.float64(), "prompt_ids": ints, "completion_ids": ints,
             "logprobs": floats, "loss_mask": pa.list_(pa.int8())}  # fmt: skip
    return pa.schema([(name, types.get(name, pa.string())) for name in COLUMNS])


def export_run(store: EpisodeStore, run_ref: str, dest: str | Path | IO[bytes] | IO[str], *, fmt: str = "jsonl") -> int:
    """Write run ``run_ref`` as a table to ``dest`` (``jsonl`` or ``parquet``); returns the rows written."""
    rows = iter_run_rows(store, run_ref)
    if fmt == "jsonl":
        if isinstance(dest, (str, Path)):
            with open(dest, "wb") as f:
                return _jsonl(rows, f)
        return _jsonl(rows, dest)
    if fmt != "parquet":
        raise ValueError(f"unknown table format {fmt!r}: jsonl or parquet")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingExtraError("Parquet needs pyarrow: pip install pyarrow", extra="parquet") from exc
    schema = _schema(pa)
    n = 0
    with pq.ParquetWriter(dest, schema) as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= _BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                n, batch = n + len(batch), []
        if batch or n == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
    return n


def _jsonl(rows: Iterator[dict[str, Any]], out: Any) -> int:
    n = 0
    binary = "b" in getattr(out, "mode", "b") and not hasattr(out, "encoding")
    for row in rows:
        line = orjson.dumps(row) + b"\n"
        out.write(line if binary else line.decode())
        n += 1
    return n

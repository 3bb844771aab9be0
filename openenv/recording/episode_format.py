"""The exchange form of one episode (a JSON object) and how it is read back into a store.

One dict per episode, steps nested; documented in docs/episode-format.md. ``FORMAT_VERSION``
changes only when a field changes meaning; readers accept every version up to their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, Literal

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from . import step_rows
from .errors import ExportFormatError, RecordingError
from .jsonable import dumps
from .models import EnvRun, Episode, EpisodeTag, Step, StepAgent, StepChunk
from .records import EpisodeRecord, StepRecord
from .tokens import pack as pack_tokens
from .tokens import turn_counts

__all__ = ["FORMAT", "FORMAT_VERSION", "Conflict", "episode_to_dict", "insert_episode", "validate"]

FORMAT = "openenv-episode"
FORMAT_VERSION = 1
Conflict = Literal["skip", "error", "replace"]
_EPISODE_KEYS = (
    "id", "env_name", "source", "label", "seed", "reset_kwargs", "started_at", "ended_at",
    "end_reason", "step_count", "total_reward", "done", "notes", "parent_episode_id", "fork_step",
    # schema 5: a training run's rollout (absent in files from before it)
    "training_run_id", "train_step", "group_id", "group_index", "finish_reason", "trainer_reward",
    "reward_components", "advantage",
    # schema 6: tokens its model turns read and wrote (an import counts them again from its turns)
    "prompt_tokens", "completion_tokens",
)  # fmt: skip
_STEP_KEYS = ("index", "action", "observation", "reward", "done", "metadata", "latency_ms", "t", "state")
_RUN_KEYS = tuple(c.name for c in EnvRun.__table__.c)
_COUNTS = ("prompt_tokens", "completion_tokens")


def _sum(values: Any) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def episode_to_dict(
    episode: EpisodeRecord, steps: list[StepRecord], failed_turn: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The exchange dict of an episode loaded with its run (``get_episode``) and all its steps;
    a step with a recorded turn also carries ``actor`` and ``agent``, and ``failed_turn`` (a model
    turn that never became a step: ``{"index", "actor", "agent"}``) is kept when given."""
    out: dict[str, Any] = {"format": FORMAT, "format_version": FORMAT_VERSION}
    out.update({k: getattr(episode, k) for k in _EPISODE_KEYS})
    out["tags"] = list(episode.tags)
    out["run"] = asdict(episode.run) if episode.run is not None else {"id": episode.run_id}
    out["steps"] = [_step_dict(s) for s in steps]
    if failed_turn is not None:
        out["failed_turn"] = failed_turn
    return out


def _step_dict(step: StepRecord) -> dict[str, Any]:
    out = {k: getattr(step, k) for k in _STEP_KEYS}
    if step.actor is not None:
        out["actor"] = step.actor
        out["agent"] = step.agent
    return out


def _need(
    obj: Mapping[str, Any], key: str, types: tuple[type, ...], where: str, optional: bool = False
) -> Any:
    if key not in obj:
        if optional:
            return None
        raise ExportFormatError(f"{where}: missing field {key!r}")
    value = obj[key]
    if value is None and optional:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise ExportFormatError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


_INT64 = (-(2**63), 2**63 - 1)


def _int64(obj: Mapping[str, Any], key: str, where: str) -> None:
    """An optional integer field must fit the store's 64-bit INTEGER columns."""
    value = obj.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not _INT64[0] <= value <= _INT64[1]:
        raise ExportFormatError(f"{where}: field {key!r} must be an integer that fits in 64 bits, not {value!r:.40}")


def validate(obj: Any, where: str = "episode") -> dict[str, Any]:
    """Check an exchange dict's shape; raises ``ExportFormatError`` naming the bad field."""
    if not isinstance(obj, dict):
        raise ExportFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if obj.get("format") != FORMAT:
        raise ExportFormatError(f"{where}: not an {FORMAT} record (format={obj.get('format')!r})")
    version = _need(obj, "format_version", (int,), where)
    if version > FORMAT_VERSION:
        raise ExportFormatError(
            f"{where}: format_version {version} is newer than supported ({FORMAT_VERSION})"
        )
    for key in ("id", "env_name", "source"):
        _need(obj, key, (str,), where)
    _need(obj, "started_at", (int, float), where)
    for key in ("seed", "step_count", "fork_step"):
        _int64(obj, key, where)
    if "reset_kwargs" not in obj:  # null: the episode started without a reset
        raise ExportFormatError(f"{where}: missing field 'reset_kwargs'")
    _need(obj, "reset_kwargs", (dict,), where, optional=True)
    run = _need(obj, "run", (dict,), where)
    _need(run, "id", (str,), f"{where}.run")
    steps = _need(obj, "steps", (list,), where)
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise ExportFormatError(f"{where}.steps[{i}]: expected an object")
        _need(step, "index", (int,), f"{where}.steps[{i}]")
        _int64(step, "index", f"{where}.steps[{i}]")
        _need(step, "t", (int, float), f"{where}.steps[{i}]")
        _need(step, "reward", (int, float), f"{where}.steps[{i}]", optional=True)
        if "observation" not in step:
            raise ExportFormatError(f"{where}.steps[{i}]: missing field 'observation'")
    return obj


def insert_episode(conn: Connection, obj: dict[str, Any], on_conflict: Conflict) -> bool:
    """Insert one validated exchange dict inside the caller's transaction; False if skipped."""
    ep_table = Episode.__table__
    eid = obj["id"]
    if conn.execute(select(ep_table.c.id).where(ep_table.c.id == eid)).first() is not None:
        if on_conflict == "skip":
            return False
        if on_conflict == "error":
            raise RecordingError(f"episode {eid} already exists in the store", code="EPISODE_EXISTS")
        for table in (Step.__table__, StepChunk.__table__, EpisodeTag.__table__, StepAgent.__table__):
            conn.execute(table.delete().where(table.c.episode_id == eid))
        conn.execute(ep_table.delete().where(ep_table.c.id == eid))
    run = obj["run"]
    run_table = EnvRun.__table__
    if conn.execute(select(run_table.c.id).where(run_table.c.id == run["id"])).first() is None:
        row = {k: run.get(k) for k in _RUN_KEYS}
        row["env_name"] = row["env_name"] or obj["env_name"]
        row["source"] = row["source"] or obj["source"]
        row["created_at"] = row["created_at"] if row["created_at"] is not None else obj["started_at"]
        row["info"] = None if row["info"] is None else dumps(row["info"])
        conn.execute(insert(run_table), row)
    row = {k: obj.get(k) for k in _EPISODE_KEYS}
    row.update(run_id=run["id"], reset_kwargs=dumps(obj["reset_kwargs"]), done=bool(obj.get("done")))
    row["step_count"] = int(row["step_count"] or 0)
    row["reward_components"] = None if row["reward_components"] is None else dumps(row["reward_components"])
    row.update(prompt_tokens=None, completion_tokens=None)  # counted from its turns below
    conn.execute(insert(ep_table), row)
    steps = [
        {
            "episode_id": eid, "idx": s["index"],
            "action": None if s.get("action") is None else dumps(s["action"]),
            "observation": dumps(s["observation"]), "reward": s.get("reward"), "done": bool(s.get("done")),
            "metadata": None if s.get("metadata") is None else dumps(s["metadata"]),
            "latency_ms": s.get("latency_ms"), "t": s["t"],
            "state": None if s.get("state") is None else dumps(s["state"]),
        }
        for s in obj["steps"]
    ]  # fmt: skip
    if steps:
        conn.execute(insert(Step.__table__), steps)
    turns = [(s["index"], s["actor"], s.get("agent")) for s in obj["steps"] if isinstance(s.get("actor"), str)]
    failed = obj.get("failed_turn")
    if isinstance(failed, dict) and isinstance(failed.get("index"), int) and isinstance(failed.get("actor"), str):
        turns.append((failed["index"], failed["actor"], failed.get("agent")))
    if turns:
        rows = [{"episode_id": eid, "idx": i, "actor": a, **dict(zip(_COUNTS, turn_counts(d), strict=True))}
                for i, a, d in turns]  # fmt: skip
        for r, (_, _, d) in zip(rows, turns, strict=True):
            packed, r["tokens"] = pack_tokens(d)
            r["data"] = None if packed is None else dumps(packed)
        conn.execute(insert(StepAgent.__table__), rows)
        step_rows.add_token_counts(conn, eid, *(_sum(r[k] for r in rows) for k in _COUNTS))
    tags = [{"episode_id": eid, "tag": t} for t in dict.fromkeys(obj.get("tags") or [])]
    if tags:
        conn.execute(insert(EpisodeTag.__table__), tags)
    return True

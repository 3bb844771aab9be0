"""Training runs in the episode store: open and end a run, tag its episodes with training step,
prompt group and index, attach the trainer's reward afterwards, and read runs with their counts.

    run = store.open_training_run("grpo-echo", trainer="trl", config={"lr": 1e-6})
    eid = store.start_episode(env_run, observation=..., training={"training_run_id": run, "train_step": 3,
                              "group_id": "1", "group_index": 0})      # or tag_episodes() afterwards
    store.set_outcomes([{"episode_id": eid, "trainer_reward": 0.5, "advantage": 1.2}])
    store.end_training_run(run, status="finished")

Tags given at ``start_episode`` travel in the episode's row (through the step journal on SQLite:
they survive a kill -9 as the steps do); tags and outcomes set afterwards are one committed batch
transaction. ``EpisodeStore`` inherits these methods (``TrainingRunsMixin``).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, bindparam, case, func, insert, or_, select, update
from sqlalchemy.engine import Connection

from .engine import guarded
from .errors import EpisodeNotFoundError, RecordingError
from .jsonable import dumps, loads
from .models import Episode, TrainingRun

__all__ = [
    "FINISH_REASONS",
    "RUN_STATUSES",
    "StepSummary",
    "TRAINING_COLUMNS",
    "TrainingRunRecord",
    "TrainingRunsMixin",
    "pid_alive",
    "training_values",
]

_EP = Episode.__table__
_TR = TrainingRun.__table__
TRAINING_COLUMNS = ("training_run_id", "train_step", "group_id", "group_index", "finish_reason",
                    "trainer_reward", "reward_components", "advantage")  # fmt: skip
TAG_COLUMNS = TRAINING_COLUMNS[:4]
RUN_STATUSES = ("running", "finished", "failed", "cancelled")
FINISH_REASONS = ("env_done", "stop", "max_turns", "truncated", "env_error", "model_error", "timeout", "invalid_action")
MAX_RUN_PAGE = 500


@dataclass(frozen=True)
class TrainingRunRecord:
    """A training run with its counts. ``status`` is ``dead`` for a run that says ``running``
    but whose process is gone on this host (``stored_status`` keeps what it said)."""

    id: str
    name: str
    trainer: str
    status: str
    stored_status: str
    started_at: float
    ended_at: float | None = None
    env_name: str | None = None
    config: dict[str, Any] | None = None
    hostname: str | None = None
    pid: int | None = None
    info: dict[str, Any] | None = None
    episodes: int = 0
    steps: int = 0
    last_step: int | None = None
    unfinished: int = 0
    reward_mean: float | None = None


@dataclass(frozen=True)
class StepSummary:
    """One training step of a run: its rollouts, groups and trainer rewards."""

    step: int | None
    episodes: int
    groups: int
    reward_mean: float | None
    reward_min: float | None
    reward_max: float | None
    env_return_mean: float | None
    length_mean: float | None
    unfinished: int
    finish_reasons: dict[str, int] = field(default_factory=dict)


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists on this host (``True`` when it cannot be told)."""
    if not pid or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's process, alive
        return True
    return True


def _status(stored: str, hostname: str | None, pid: int | None) -> str:
    if stored == "running" and hostname == socket.gethostname() and not pid_alive(pid):
        return "dead"
    return stored


def _run_record(m: Mapping[str, Any], counts: Mapping[str, Any] | None) -> TrainingRunRecord:
    c = counts or {}
    return TrainingRunRecord(
        id=m["id"], name=m["name"], trainer=m["trainer"], status=_status(m["status"], m["hostname"], m["pid"]),
        stored_status=m["status"], started_at=m["started_at"], ended_at=m["ended_at"], env_name=m["env_name"],
        config=loads(m["config"]) if m["config"] else None, hostname=m["hostname"], pid=m["pid"],
        info=loads(m["info"]) if m["info"] else None, episodes=int(c.get("episodes") or 0),
        steps=int(c.get("steps") or 0), last_step=c.get("last_step"), unfinished=int(c.get("unfinished") or 0),
        reward_mean=c.get("reward_mean"),
    )  # fmt: skip


def _counts(conn: Connection, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per-run episode counts (one grouped read over ``ix_episode_training``)."""
    if not run_ids:
        return {}
    c = _EP.c
    stmt = (
        select(
            c.training_run_id, func.count().label("episodes"), func.count(func.distinct(c.train_step)).label("steps"),
            func.max(c.train_step).label("last_step"),
            func.sum(case((c.ended_at.is_(None), 1), else_=0)).label("unfinished"),
            func.avg(c.trainer_reward).label("reward_mean"),
        )
        .where(c.training_run_id.in_(run_ids))
        .group_by(c.training_run_id)
    )  # fmt: skip
    return {row.training_run_id: dict(row._mapping) for row in conn.execute(stmt)}


def _check_tag(row: Mapping[str, Any]) -> None:
    step, index = row.get("train_step"), row.get("group_index")
    for name, value in (("train_step", step), ("group_index", index)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise RecordingError(f"{name} must be an integer >= 0, not {value!r}", code="BAD_TRAINING_TAG")
    group = row.get("group_id")
    if group is not None and (not isinstance(group, str) or len(group) > 64):
        raise RecordingError(f"group_id must be a string of at most 64 characters, not {group!r}",
                             code="BAD_TRAINING_TAG")  # fmt: skip


def training_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The episode columns of ``row`` (training keys only; components JSON-encoded), checked."""
    unknown = set(row) - set(TRAINING_COLUMNS) - {"episode_id"}
    if unknown:
        raise RecordingError(f"unknown training fields {sorted(unknown)}; known: {list(TRAINING_COLUMNS)}",
                             code="BAD_TRAINING_TAG")  # fmt: skip
    _check_tag(row)
    out = {k: row[k] for k in TRAINING_COLUMNS if k in row}
    for key in ("trainer_reward", "advantage"):
        value = out.get(key)
        if value is not None:
            value = float(value)
            out[key] = None if value != value else value  # NaN (unscorable) is stored as no value
    if out.get("reward_components") is not None:
        comps = {str(k): (None if v is None or v != v else float(v)) for k, v in dict(out["reward_components"]).items()}
        out["reward_components"] = dumps(comps)
    reason = out.get("finish_reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 32):
        raise RecordingError(f"finish_reason must be a short string, not {reason!r}", code="BAD_TRAINING_TAG")
    return out


class TrainingRunsMixin:
    """Training-run methods of ``EpisodeStore`` (it provides ``write`` and ``engine``)."""

    def open_training_run(
        self, name: str, *, trainer: str = "custom", env_name: str | None = None,
        config: dict[str, Any] | None = None, info: dict[str, Any] | None = None, run_id: str | None = None,
    ) -> str:  # fmt: skip
        """Start a training run (status ``running``, this host and pid); returns its id."""
        from .store import new_id

        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise RecordingError(f"a training run needs a name of 1..200 characters, not {name!r}",
                                 code="BAD_TRAINING_RUN")  # fmt: skip
        row = {
            "id": run_id or new_id(), "name": name, "trainer": str(trainer)[:64], "env_name": env_name,
            "config": None if config is None else dumps(config), "status": "running", "started_at": time.time(),
            "ended_at": None, "hostname": socket.gethostname(), "pid": os.getpid(),
            "info": None if info is None else dumps(info),
        }  # fmt: skip
        self.write(lambda c: c.execute(insert(_TR), row), what="open training run", drain=False)  # type: ignore[attr-defined]
        return row["id"]

    def end_training_run(self, run_id: str, *, status: str = "finished", info: dict[str, Any] | None = None) -> None:
        """Mark a run ended (``finished``, ``failed`` or ``cancelled``); ``info`` replaces its info."""
        if status not in RUN_STATUSES[1:]:
            raise RecordingError(f"status must be one of {list(RUN_STATUSES[1:])}, not {status!r}",
                                 code="BAD_TRAINING_RUN")  # fmt: skip
        values: dict[str, Any] = {"status": status, "ended_at": time.time()}
        if info is not None:
            values["info"] = dumps(info)

        def tx(conn: Connection) -> None:
            if conn.execute(update(_TR).where(_TR.c.id == run_id).values(**values)).rowcount != 1:
                raise EpisodeNotFoundError(f"no training run {run_id!r}", code="RUN_NOT_FOUND")

        self.write(tx, what="end training run")  # type: ignore[attr-defined]

    def tag_episodes(self, training_run_id: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Put episodes in a run: each row ``{"episode_id", "train_step"?, "group_id"?, "group_index"?}``
        (and optionally the outcome fields of ``set_outcomes``); one transaction. Returns how many
        episodes were found."""
        return self.set_outcomes([{**row, "training_run_id": training_run_id} for row in rows])

    def set_outcomes(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Attach what the trainer made of episodes: each row ``{"episode_id", "trainer_reward"?,
        "reward_components"? ({name: value}), "advantage"?, "finish_reason"?}`` (any training field
        may be given; absent ones are left as they are). One transaction; returns episodes found."""
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in rows:
            eid = row.get("episode_id")
            if not isinstance(eid, str) or not eid:
                raise RecordingError(f"each row needs an episode_id, got {dict(row)!r}", code="BAD_TRAINING_TAG")
            values = training_values(row)
            if values:
                groups.setdefault(tuple(sorted(values)), []).append({"b_id": eid, **values})
        if not groups:
            return 0

        def tx(conn: Connection) -> int:
            found = 0
            for keys, params in groups.items():
                stmt = update(_EP).where(_EP.c.id == bindparam("b_id")).values({k: bindparam(k) for k in keys})
                for at in range(0, len(params), 500):
                    found += conn.execute(stmt, params[at : at + 500]).rowcount
            return found

        return self.write(tx, what="record training outcomes")  # type: ignore[attr-defined]

    # -- reads ---------------------------------------------------------------------------------
    def list_training_runs(self, *, limit: int = 50, cursor: str | None = None,
                           name: str | None = None) -> tuple[list[TrainingRunRecord], str | None]:  # fmt: skip
        """Runs newest first with their counts, and the cursor of the next page (``None``: last)."""
        limit = max(1, min(int(limit), MAX_RUN_PAGE))
        stmt = select(_TR).order_by(_TR.c.started_at.desc(), _TR.c.id.desc()).limit(limit + 1)
        if name is not None:
            stmt = stmt.where(_TR.c.name == name)
        if cursor:
            try:
                started_s, rid = cursor.split("~", 1)
                started = float(started_s)
            except ValueError as exc:
                raise RecordingError(f"bad listing cursor {cursor!r}", code="BAD_CURSOR") from exc
            c = _TR.c
            stmt = stmt.where(or_(c.started_at < started, and_(c.started_at == started, c.id < rid)))
        with guarded("list training runs"), self.engine.connect() as conn:  # type: ignore[attr-defined]
            rows = [dict(r._mapping) for r in conn.execute(stmt)]
            more = len(rows) > limit
            rows = rows[:limit]
            counts = _counts(conn, [r["id"] for r in rows])
        items = [_run_record(r, counts.get(r["id"])) for r in rows]
        return items, (f"{items[-1].started_at!r}~{items[-1].id}" if more else None)

    def get_training_run(self, ref: str) -> TrainingRunRecord:
        """A run by id, unique id prefix, or name (the newest run of that name)."""
        with guarded("load training run"), self.engine.connect() as conn:  # type: ignore[attr-defined]
            row = _find_run(conn, ref)
            return _run_record(row, _counts(conn, [row["id"]]).get(row["id"]))

    def training_steps(self, run_id: str) -> list[StepSummary]:
        """Per training step of a run: rollouts, groups, trainer reward mean/min/max, finish reasons."""
        c = _EP.c
        stmt = (
            select(
                c.train_step, func.count().label("n"), func.count(func.distinct(c.group_id)).label("groups"),
                func.avg(c.trainer_reward).label("mean"), func.min(c.trainer_reward).label("lo"),
                func.max(c.trainer_reward).label("hi"), func.avg(c.total_reward).label("ret"),
                func.avg(c.step_count).label("length"),
                func.sum(case((c.ended_at.is_(None), 1), else_=0)).label("unfinished"),
            )
            .where(c.training_run_id == run_id).group_by(c.train_step).order_by(c.train_step)
        )  # fmt: skip
        reasons = (select(c.train_step, c.finish_reason, func.count()).where(c.training_run_id == run_id)
                   .group_by(c.train_step, c.finish_reason))  # fmt: skip
        with guarded("summarise training run"), self.engine.connect() as conn:  # type: ignore[attr-defined]
            by_step: dict[Any, dict[str, int]] = {}
            for step, reason, n in conn.execute(reasons):
                by_step.setdefault(step, {})[reason or "unknown"] = int(n)
            return [
                StepSummary(step=r.train_step, episodes=int(r.n), groups=int(r.groups), reward_mean=r.mean,
                            reward_min=r.lo, reward_max=r.hi, env_return_mean=r.ret,
                            length_mean=None if r.length is None else float(r.length), unfinished=int(r.unfinished or 0),
                            finish_reasons=by_step.get(r.train_step, {}))
                for r in conn.execute(stmt)
            ]  # fmt: skip


def _find_run(conn: Connection, ref: str) -> dict[str, Any]:
    ref = (ref or "").strip()
    if not ref:
        raise EpisodeNotFoundError("no training run given", code="RUN_NOT_FOUND")
    row = conn.execute(select(_TR).where(_TR.c.id == ref)).first()
    if row is None and all(ch in "0123456789abcdef" for ch in ref.lower()):
        low = ref.lower()
        rows = conn.execute(select(_TR).where(_TR.c.id >= low, _TR.c.id < low + "g").limit(2)).all()
        if len(rows) > 1:
            raise RecordingError(f"training run id prefix {ref!r} is ambiguous; give more digits", code="AMBIGUOUS_ID")
        row = rows[0] if rows else None
    if row is None:
        row = conn.execute(select(_TR).where(_TR.c.name == ref)
                           .order_by(_TR.c.started_at.desc(), _TR.c.id.desc()).limit(1)).first()  # fmt: skip
    if row is None:
        raise EpisodeNotFoundError(f"no training run {ref!r} (give its id, an id prefix or its name)",
                                   code="RUN_NOT_FOUND")  # fmt: skip
    return dict(row._mapping)

"""``EpisodeStore``: open a store and write to it through one write path.

    store = EpisodeStore("episodes.db")          # or "postgresql://user@host/db"
    run = store.create_run(env_name="echo")
    ep = store.start_episode(run, reset_kwargs={"seed": 1}, observation={"echoed": ""})
    store.append_step(ep, 1, action={"message": "hi"}, observation={"echoed": "hi"}, reward=1.0, done=True)

Every write is one short transaction on the store's single writer connection (a lock makes it
safe across threads); it has committed when the method returns. ``journal_steps`` (the recorder's
path on SQLite) instead makes steps durable in a journal file and commits them in the background
(``journal.py``); every read and write of this process waits for them first. Reads (``queries.py``,
re-exported here as methods) use pooled connections and never block the writer under WAL.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import delete, event, insert, select, text, update
from sqlalchemy.engine import Connection

from . import queries, step_rows
from .engine import (
    BUSY_TIMEOUT_MS,
    enable_wal,
    guarded,
    make_engine,
    raw_sqlite_transaction,
    write_transaction,
)
from .errors import EpisodeNotFoundError, RecordingError, StoreFullError
from .journal import StepJournal, drain_local, no_drain, recover, track_for_fork
from .jsonable import dumps
from .models import EnvRun, Episode, EpisodeTag, Step, StepAgent, StepChunk
from .readonly import read_only_engine, read_only_refusal, should_open_read_only
from .schema import ensure_schema
from .store_reads import EpisodeReadsMixin
from .tokens import pack as pack_tokens
from .tokens import turn_counts
from .training_runs import TrainingRunsMixin, training_values

__all__ = ["EpisodeStore", "new_id"]

T = TypeVar("T")
log = logging.getLogger("openenv.recording")
_EP = Episode.__table__
_STEP = Step.__table__
_CHUNK = StepChunk.__table__
_AGENT = StepAgent.__table__


def new_id() -> str:
    """A fresh 32-hex-digit id for a run or an episode."""
    return uuid.uuid4().hex


class EpisodeStore(TrainingRunsMixin, EpisodeReadsMixin):
    """The episode store on SQLite (a path) or PostgreSQL (a ``postgresql://`` URL); training runs:
    ``training_runs.py``."""

    def __init__(
        self, target: str | Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, journal: bool = True
    ) -> None:
        """Open (creating or migrating) the store; ``busy_timeout_ms`` is SQLite's lock wait per try;
        ``journal=False`` makes ``journal_steps`` commit each call instead (SQLite only)."""
        self.target = str(target)
        self.engine = make_engine(target, busy_timeout_ms=busy_timeout_ms)
        self.dialect = self.engine.dialect.name
        self._lock = threading.Lock()
        self._busy_ms = busy_timeout_ms
        self._writer: Connection | None = None
        self._pid = os.getpid()
        self._journal: StepJournal | None = None
        self._runs: dict[str, tuple[str, str, str | None]] = {}  # runs created through the journal
        self.journaled = journal and self.dialect == "sqlite"
        self._key = os.path.realpath(self.engine.url.database or "") if self.dialect == "sqlite" else ""
        self.read_only = False  # a full disk at open: reads only (``readonly.py``)
        try:
            self.write(ensure_schema, what=f"open store {self._display()}")
            if self.dialect == "sqlite":
                enable_wal(self.engine, self._display())
                key = self._key
                event.listen(self.engine, "engine_connect", lambda _conn: drain_local(key))
                try:
                    recover(key, self)
                except StoreFullError:  # no room to replay: the journals wait for an open that has some
                    log.warning("%s: step journals not replayed: the disk is full", self._display())
                track_for_fork(self)
        except RecordingError as exc:
            self.close()  # refused (corrupt, newer, unreachable): release every connection
            if self.dialect != "sqlite" or not should_open_read_only(self._key, exc):
                raise
            self.engine, self.read_only = read_only_engine(self._key, self._display()), True
        except BaseException:
            self.close()
            raise

    def _display(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Commit journaled steps; release the writer connection and the pool."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        self.engine.dispose()

    def flush(self) -> None:
        """Return once every journaled write of this process is committed (raises, once, an error
        the committer met, e.g. ``StoreFullError``)."""
        if self._journal is not None and self._journal.pid == os.getpid():
            self._journal.drain()

    def check(self) -> None:
        """Raise, once, an error the journal committer met since the last ``check`` or ``flush``
        (``StoreFullError``, ``StoreBusyError``...; what was journaled stays and is retried).
        ``record()`` calls it before every reset and step, before the env moves on."""
        journal = self._journal  # a forked child starts with none (``track_for_fork``)
        if journal is not None:
            journal.check()

    def __enter__(self) -> EpisodeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, fn: Callable[[Connection], T], *, what: str = "write", drain: bool = True) -> T:
        """Run ``fn(conn)`` as one committed write transaction: the single write path (after every
        journaled step of this store, so episode ends and deletions see them)."""
        if drain and self._journal is not None:
            self._journal.drain()
        with self._lock:
            try:
                return write_transaction(self._writer_connection(), fn, what=what)
            finally:
                self._drop_writer_if_broken()

    def _drop_writer_if_broken(self) -> None:
        """After a lost connection (server restart), the next write reconnects."""
        if self._writer is not None and self._writer.invalidated:
            self._writer.close()
            self._writer = None

    def _writer_connection(self) -> Connection:
        """The one writer connection (call with the lock held); reopened after a fork."""
        if self._pid != os.getpid():  # forked: never share the parent's connection
            self._writer, self._pid = None, os.getpid()
            self.engine.dispose(close=False)
        if self.read_only:
            raise read_only_refusal(self._display())
        if self._writer is None:
            with guarded(f"connect to {self._display()}"), no_drain():
                self._writer = self.engine.connect().execution_options(openenv_begin="IMMEDIATE")
        return self._writer

    # -- writes ------------------------------------------------------------------------------
    def create_run(
        self,
        *,
        env_name: str,
        env_version: str | None = None,
        base_url: str | None = None,
        provider: str | None = None,
        image: str | None = None,
        action_schema_hash: str | None = None,
        observation_schema_hash: str | None = None,
        source: str = "programmatic",
        label: str | None = None,
        info: dict[str, Any] | None = None,
        run_id: str | None = None,
        created_at: float | None = None,
        journaled: bool = False,
    ) -> str:
        """Record where episodes run and who drives them; returns the run id.

        ``journaled``: on a journaled store, durable in the step journal now and committed with the
        steps (what ``record()`` does; reads of this process wait for it as for steps)."""
        row = {
            "id": run_id or new_id(),
            "env_name": env_name,
            "env_version": env_version,
            "base_url": base_url,
            "provider": provider,
            "image": image,
            "action_schema_hash": action_schema_hash,
            "observation_schema_hash": observation_schema_hash,
            "source": source,
            "label": label,
            "created_at": time.time() if created_at is None else created_at,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "info": None if info is None else dumps(info),
        }
        if journaled and self.journaled:
            self._step_journal().insert("env_run", row)
            self._runs[row["id"]] = (env_name, source, label)
        else:
            self.write(lambda c: c.execute(insert(EnvRun.__table__), row), what="create run", drain=False)
        return row["id"]

    def start_episode(
        self,
        run_id: str,
        *,
        reset_kwargs: dict[str, Any] | None = None,
        observation: Any,
        reward: float | None = None,
        done: bool = False,
        metadata: dict[str, Any] | None = None,
        latency_ms: float | None = None,
        state: Any = None,
        episode_id: str | None = None,
        replaces: str | None = None,
        journaled: bool = False,
        training: dict[str, Any] | None = None,
        reset: bool = True,
    ) -> str:
        """Insert an episode and its reset observation (step 0); returns the episode id.

        ``replaces``: an episode of the same client to end with reason ``reset`` (same transaction).
        ``journaled``: as for ``create_run``, for a run this store created with ``journaled=True``.
        ``training``: its training run, step, group and index (``training_runs.TRAINING_COLUMNS``).
        ``reset=False``: the episode started at a step, with no reset before it (a 0.10-style client
        stepping a fresh session): ``reset_kwargs`` is stored as ``null`` and step 0 holds no
        observation, with metadata ``{"reset": false}``.
        """
        kwargs = dict(reset_kwargs or {})
        seed = kwargs.get("seed") if reset else None
        if not reset:  # step 0 says so too, for step views
            metadata = {"reset": False, **(metadata or {})}
        now = time.time()
        eid = episode_id or new_id()
        step0 = step_rows.make_step_row(
            eid, 0, None, observation, reward, done, metadata, latency_ms, now, state
        )
        episode = {
            "id": eid,
            "run_id": run_id,
            "reset_kwargs": dumps(kwargs) if reset else "null",
            "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            "started_at": now,
            "ended_at": now if done else None,
            "end_reason": "done" if done else None,
            "step_count": 0,
            "total_reward": None,
            "done": done,
            **(training_values(training) if training else {}),
        }
        run = self._runs.get(run_id) if journaled and self.journaled else None
        if run is not None:
            journal = self._step_journal()
            if replaces is not None:
                journal.queue({"episode_id": replaces, "end": "reset", "t": now})
            journal.insert("episode", {**episode, "env_name": run[0], "source": run[1], "label": run[2]})
            journal.insert("step", step0)
            return eid

        def tx(conn: Connection) -> None:
            run = conn.execute(
                text("SELECT env_name, source, label FROM env_run WHERE id = :id"), {"id": run_id}
            ).first()
            if run is None:
                raise EpisodeNotFoundError(f"no run {run_id!r}")
            conn.execute(insert(_EP), {**episode, "env_name": run.env_name, "source": run.source, "label": run.label})
            step_rows.insert_first_step(conn, step0)
            if replaces is not None:
                ended = {"t": now, "reason": "reset", "done": False, "episode_id": replaces}
                conn.execute(step_rows.END_EPISODE, ended)

        self.write(tx, what="start episode", drain=replaces is not None)  # a new id waits for nothing
        return eid

    def append_step(
        self,
        episode_id: str,
        index: int,
        *,
        action: Any,
        observation: Any,
        reward: float | None = None,
        done: bool = False,
        metadata: dict[str, Any] | None = None,
        latency_ms: float | None = None,
        state: Any = None,
    ) -> None:
        """Append step ``index`` (>= 1); committed on return. ``done`` ends the episode."""
        self.append_steps([step_rows.make_step_row(episode_id, index, action, observation, reward, done, metadata,
                                          latency_ms, time.time(), state)])  # fmt: skip

    def append_steps(self, rows: Sequence[dict[str, Any]]) -> None:
        """Commit several prepared step rows (``step_row``) in one transaction (group commit)."""
        what = "record step " + ", ".join(f"{r.get('idx')} of episode {r['episode_id']}" for r in rows[:3])
        if self.dialect == "sqlite":
            with self._lock:  # the driver connection of the one writer: ~4x cheaper than Core per step
                raw = self._writer_connection().connection.driver_connection
                raw_sqlite_transaction(raw, lambda r: step_rows.sqlite_append(r, rows), what=what)
            return
        self.write(lambda conn: step_rows.core_append(conn, rows), what=what)

    def recover_journals(self) -> int:
        """Replay journals of dead processes (done at open; long-lived readers may call it): rows restored."""
        return recover(self._key, self) if self.dialect == "sqlite" and not self.read_only else 0

    def journal_steps(self, rows: Sequence[dict[str, Any]]) -> None:
        """Make prepared step rows durable and return; on SQLite they reach the journal file now and
        the database a moment later (``journal.py``), elsewhere this is ``append_steps``."""
        if not self.journaled:
            return self.append_steps(rows)
        return self._step_journal().append(rows)

    def journal_wire(
        self, episode_id: bytes, idx: int, t: float, latency_ms: float, reward: float | None, done: bool,
        request: bytes, reply: bytes,
    ) -> None:  # fmt: skip
        """Make one step durable from its wire texts (the step request and the server's reply, as
        sent and received; the episode id as ASCII bytes) and the reward and done the client parsed
        from them; only for journaled stores (``journaled``): the committer stores it in a step chunk."""
        journal = self._journal  # a forked child starts with none (``track_for_fork``)
        if journal is None:
            journal = self._step_journal()
        journal.append_wire(episode_id, idx, t, latency_ms, reward, done, request, reply)

    def journal_wires(self, steps: list[tuple[Any, ...]]) -> None:
        """``journal_wire`` for several steps at once (each a tuple of its arguments): one lock, one
        call, for a batch of sessions (``VectorEnvClient``)."""
        journal = self._journal
        if journal is None:
            journal = self._step_journal()
        journal.append_wires(steps)

    def journal_end(self, episode_id: str, reason: str) -> None:
        """``finish_episode``, committed after the journaled steps before it (a crash first leaves the
        episode unfinished, as it would have been anyway)."""
        if not self.journaled:
            return self.finish_episode(episode_id, reason)
        return self._step_journal().queue({"episode_id": episode_id, "end": reason, "t": time.time()})

    def _step_journal(self) -> StepJournal:
        if self.read_only:
            raise read_only_refusal(self._display())
        journal = self._journal
        if journal is None or journal.pid != os.getpid():
            with self._lock:
                if self._journal is None or self._journal.pid != os.getpid():
                    self._journal = StepJournal(self._key, self._busy_ms)
                journal = self._journal
        return journal

    def record_turn(
        self, episode_id: str, index: int, actor: str, data: dict[str, Any] | None = None, *, journaled: bool = False
    ) -> None:
        """Record who acted at step ``index`` (``"model"``/``"human"``) and, for a model, its prompt,
        completion, tokens and latency (``data``, JSON; never an API key). ``journaled``: durable in
        the step journal now and committed with the steps (a journaled store), else committed now."""
        prompt, completion = turn_counts(data)  # kept on the turn and summed on the episode (schema 6)
        data, tokens = pack_tokens(data)  # token id/logprob/mask lists as typed arrays (tokens.py)
        row = {"episode_id": episode_id, "idx": int(index), "actor": actor, "data": None if data is None else dumps(data),
               "tokens": tokens, "prompt_tokens": prompt, "completion_tokens": completion}  # fmt: skip
        if journaled and self.journaled:
            self._step_journal().insert("step_agent", row)  # the committer adds the counts (sqlite_steps)
            return

        def tx(conn: Connection) -> None:
            c = _AGENT.c
            here = (c.episode_id == episode_id, c.idx == row["idx"])
            old = conn.execute(select(c.prompt_tokens, c.completion_tokens).where(*here)).first()
            conn.execute(delete(_AGENT).where(*here))
            conn.execute(insert(_AGENT), row)
            step_rows.add_token_counts(conn, episode_id, prompt, completion, old)

        self.write(tx, what="record turn")

    def load_turns(
        self, episode_id: str, *, start: int = 0, stop: int | None = None
    ) -> dict[int, tuple[str, dict[str, Any] | None]]:
        """``{index: (actor, data)}`` recorded with ``record_turn`` (``load_steps`` merges them into
        its steps; this also returns a turn that never became a step)."""
        with guarded("load turns"), self.engine.connect() as conn:
            return queries.load_agent_turns(conn, episode_id, start=start, stop=stop)

    def finish_episode(self, episode_id: str, reason: str) -> None:
        """Mark an episode ended (``reset``, ``closed``, ``error``...) unless it already is."""
        params = {"t": time.time(), "reason": reason, "done": False, "episode_id": episode_id}
        self.write(lambda c: c.execute(step_rows.END_EPISODE, params), what="finish episode")

    def delete_episodes(self, episode_ids: Iterable[str]) -> int:
        """Delete episodes with their steps and tags; returns how many episodes went."""
        ids = list(episode_ids)

        def tx(conn: Connection) -> int:
            gone = 0
            for chunk in (ids[i : i + 500] for i in range(0, len(ids), 500)):
                conn.execute(delete(_STEP).where(_STEP.c.episode_id.in_(chunk)))
                conn.execute(delete(_CHUNK).where(_CHUNK.c.episode_id.in_(chunk)))
                conn.execute(delete(_AGENT).where(_AGENT.c.episode_id.in_(chunk)))
                conn.execute(delete(EpisodeTag.__table__).where(EpisodeTag.__table__.c.episode_id.in_(chunk)))
                gone += conn.execute(delete(_EP).where(_EP.c.id.in_(chunk))).rowcount
            return gone

        return self.write(tx, what="delete episodes")

    def set_notes(self, episode_id: str, notes: str | None) -> None:
        """Replace an episode's free-text notes."""

        def tx(conn: Connection) -> None:
            if conn.execute(update(_EP).where(_EP.c.id == episode_id).values(notes=notes)).rowcount == 0:
                raise EpisodeNotFoundError(f"no episode {episode_id!r}")

        self.write(tx, what="set notes")

    def set_tags(self, episode_id: str, tags: Sequence[str]) -> None:
        """Replace an episode's tags."""
        table = EpisodeTag.__table__

        def tx(conn: Connection) -> None:
            if conn.execute(text("SELECT 1 FROM episode WHERE id = :id"), {"id": episode_id}).first() is None:
                raise EpisodeNotFoundError(f"no episode {episode_id!r}")
            conn.execute(delete(table).where(table.c.episode_id == episode_id))
            rows = [{"episode_id": episode_id, "tag": t} for t in dict.fromkeys(tags)]
            if rows:
                conn.execute(insert(table), rows)

        self.write(tx, what="set tags")

    def step_row(
        self, episode_id: str, index: int, *, action: Any, observation: Any, reward: float | None = None,
        done: bool = False, metadata: dict[str, Any] | None = None, latency_ms: float | None = None,
        state: Any = None,
    ) -> dict[str, Any]:  # fmt: skip
        """A step row for ``append_steps`` (serialised now, stamped with the current time)."""
        return step_rows.make_step_row(episode_id, index, action, observation, reward, done, metadata, latency_ms,
                              time.time(), state)  # fmt: skip

    def mark_fork(self, episode_id: str, parent_episode_id: str, fork_step: int) -> None:
        """Record that ``episode_id`` was forked from ``parent_episode_id`` after step ``fork_step``."""
        values = {"parent_episode_id": parent_episode_id, "fork_step": int(fork_step)}

        def tx(conn: Connection) -> None:
            if conn.execute(update(_EP).where(_EP.c.id == episode_id).values(**values)).rowcount != 1:
                raise EpisodeNotFoundError(f"no episode {episode_id!r}", episode_id=episode_id)

        self.write(tx, what="mark fork")

"""The step journal: how a recorded step becomes durable without a SQLite commit per step.

``append_wire`` (and ``append`` for prepared rows) copies a record into this process's journal
file, which is memory-mapped (``MAP_SHARED``, blocks reserved up front with ``posix_fallocate``):
no system call, no file lock, no serialisation beyond what the wire already did. Once it returned,
the record is in the kernel's page cache: it survives a crash of the process exactly like a
SQLite commit with ``synchronous=NORMAL`` does (neither survives a power cut without fsync).

A committer (``openenv.stepjournal.committer``; a child process, so the recording loop spends no
time on SQLite) commits the records every ``LINGER_S``, and at once when this process reads or
writes the store. The file is a ring (``openenv/stepjournal/format.py``): the writer starts again
at the top once the committer is past it, and the file grows only while the committer lags.

An error the committer meets (a busy or full disk, a missing table) goes to the control page and
the records stay, retried. Appends never raise it (the caller's step would be lost after the
env took it): ``check`` raises each one once, and so does ``drain``; the recording client checks
before every reset and step, so the env never moves on for a call that then fails.

Files live in ``<db>.steps/<pid>-<random>.jnl``; the owner holds an exclusive ``flock`` on its
file while it lives. A file whose lock can be taken belongs to a process that died: its committer
finishes it, and the next store to open replays whatever is left (``recover``, idempotent).
"""

from __future__ import annotations

import atexit
import fcntl
import mmap
import os
import struct
import threading
import uuid
import weakref
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from openenv.stepjournal import committer as tail
from openenv.stepjournal import format as fmt
from openenv.stepjournal import sqlite_steps

from .committer_host import CommitterHost, start_committer
from .engine import error_for, translate
from .errors import RecordingError

__all__ = [
    "StepJournal",
    "drain_local",
    "journal_folder",
    "no_drain",
    "parse_journal",
    "recover",
    "track_for_fork",
]

INITIAL_BYTES = 1 << 16  # the ring's first size (control page included); doubled when it must grow
CLOSE_WAIT_S = 60.0  # how long ``close`` waits for the committer before leaving the rest to recovery
_RESERVE = fmt.HEADER.size * 2 + 9  # room always kept for a wrap or jump record and the end mark
_END = bytes(fmt.HEADER.size)
_pack_header = fmt.HEADER.pack
_HEADER_SIZE = fmt.HEADER.size
_error_seq = fmt.error_seq
_crc32 = zlib.crc32
_pack_step = fmt.pack_step
_tl = threading.local()
_live: dict[str, weakref.WeakSet[StepJournal]] = {}
_live_lock = threading.Lock()
_stores: weakref.WeakSet[Any] = weakref.WeakSet()


def journal_folder(db_path: str) -> Path:
    """Where the journals of the SQLite file ``db_path`` live."""
    return Path(db_path + ".steps")


class no_drain:  # noqa: N801 - used as a context manager
    """Inside the block, reads on this thread do not wait for journals (the writer's own connect)."""

    def __enter__(self) -> None:
        self.old = getattr(_tl, "no_drain", False)
        _tl.no_drain = True

    def __exit__(self, *exc: object) -> None:
        _tl.no_drain = self.old


def drain_local(key: str) -> None:
    """Wait until every journal of this process on the database ``key`` is committed (best effort:
    a journal whose commits fail stops waiting; the failure is reported to its writer)."""
    if getattr(_tl, "no_drain", False):
        return
    with _live_lock:
        journals = list(_live.get(key, ()))
    for journal in journals:
        journal.drain(raise_error=False)


class StepJournal:
    """One process's journal on one store: ``append_wire``/``append``/``queue`` records; the
    committer puts them in SQLite."""

    def __init__(self, key: str, busy_timeout_ms: int = 10_000) -> None:
        tmp = journal_folder(key) / f"{os.getpid()}-{uuid.uuid4().hex}.tmp"
        try:
            tmp.parent.mkdir(exist_ok=True)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise translate(exc, "create the step journal") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # locked before it has the name recovery looks for
            os.posix_fallocate(fd, 0, INITIAL_BYTES)  # a full disk fails here, never later as SIGBUS
            os.pwrite(fd, fmt.control_page(), 0)
            self._map = mmap.mmap(fd, INITIAL_BYTES)
        except OSError as exc:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise translate(exc, "create the step journal") from exc
        self.path = tmp.with_suffix(".jnl")
        os.rename(tmp, self.path)
        self.fd, self.pid, self.key, self._busy_ms = fd, os.getpid(), key, busy_timeout_ms
        self._size = INITIAL_BYTES
        self._lap, self._end = fmt.FIRST_LAP, fmt.DATA_START
        self._wrapped_at = 0  # where the last lap ended (matters while the committer is a lap behind)
        self._limit = self._size - _RESERVE  # records may go below this without looking at progress
        self._lock = threading.Lock()
        self._drain_lock = threading.Lock()
        self._closed = False
        self._error_seq = 0
        self._host: CommitterHost = start_committer(str(self.path), key, busy_timeout_ms)
        # what a journal dropped without ``close`` must let go of, so its committer finishes
        self._cell: list[Any] = [self._host, fd]
        self._finalizer = weakref.finalize(self, _let_go, self._cell)
        self._finalizer.atexit = False  # at exit ``_close_all`` closes what is still open
        with _live_lock:
            _live.setdefault(key, weakref.WeakSet()).add(self)

    @property
    def committer_kind(self) -> str:
        """``"process"`` or ``"thread"``: where this journal's records are committed."""
        return self._host.kind

    # -- writing -----------------------------------------------------------------------------
    def append_wire(
        self, episode_id: bytes, idx: int, t: float, latency_ms: float, reward: float | None, done: bool,
        request: bytes, reply: bytes,
    ) -> None:  # fmt: skip
        """Make one step durable as its wire texts (the committer stores them in a step chunk)."""
        self._put(_pack_step(episode_id, idx, t, latency_ms, reward, done, request, reply))

    def append_wires(self, steps: Sequence[tuple[Any, ...]]) -> None:
        """``append_wire`` for several steps (``append_wire``'s arguments each), under one lock."""
        payloads = [_pack_step(*step) for step in steps]
        with self._lock:
            if self._closed:
                raise RecordingError("record step: the store is closed", code="STORE_CLOSED")
            for payload in payloads:
                if self._end + _HEADER_SIZE + len(payload) > self._limit:
                    self._make_room(_HEADER_SIZE + len(payload))
                self._write(payload)

    def append(self, rows: Sequence[dict[str, Any]]) -> None:
        """Make prepared step rows durable."""
        self._put(fmt.pack_rows([list(row.values()) for row in rows]))

    def insert(self, table: str, row: dict[str, Any]) -> None:
        """A run, episode or reset-step row, committed before the steps after it."""
        self._put(fmt.pack_insert(table, row))

    def queue(self, entry: dict[str, Any]) -> None:
        """An episode end ``{"episode_id", "end", "t"}``, committed after the records before it."""
        self._put(fmt.pack_end(entry["episode_id"], entry["end"], entry["t"]))

    def _put(self, payload: bytes) -> None:
        with self._lock:
            if self._closed:
                raise RecordingError("record step: the store is closed", code="STORE_CLOSED")
            if self._end + _HEADER_SIZE + len(payload) > self._limit:
                self._make_room(_HEADER_SIZE + len(payload))
            self._write(payload)

    def _write(self, payload: bytes) -> None:
        """Write one record at the end: end mark first, header last (a reader sees all or nothing)."""
        m, at, lap = self._map, self._end, self._lap
        body = at + _HEADER_SIZE
        stop = body + len(payload)
        m[stop : stop + _HEADER_SIZE] = _END
        m[body:stop] = payload
        m[at:body] = _pack_header(len(payload), _crc32(payload, lap), lap)
        self._end = stop

    def _make_room(self, n: int) -> None:
        """Wrap, jump or grow so that a record of ``n`` bytes fits at ``self._end``."""
        if not self._host.alive():
            self._restart_committer()
        progress = fmt.read_progress(self._map)
        behind = progress is None or progress.lap != self._lap  # still on the previous lap
        if not behind:
            if self._end + n + _RESERVE <= self._size:
                self._limit = self._size - _RESERVE
                return
            if fmt.DATA_START + n + _RESERVE <= progress.offset:  # the top is committed: wrap
                self._write(fmt.pack_wrap())
                self._wrapped_at, self._lap, self._end = self._end, self._lap + 1, fmt.DATA_START
                self._limit = progress.offset - _RESERVE
                return
            self._grow(self._end + n + _RESERVE)
            return
        if self._end >= self._wrapped_at:  # past the previous lap's records: the tail is ours
            self._grow(self._end + n + _RESERVE)
            return
        limit = progress.offset if progress is not None else self._end
        if self._end + n + _RESERVE <= limit:
            self._limit = limit - _RESERVE
            return
        target = self._size  # would run into records not yet committed: continue past them all
        self._grow(target + n + _RESERVE)
        self._write(fmt.pack_jump(target))
        self._end = target
        self._wrapped_at = 0

    def _grow(self, need: int) -> None:
        size = max(2 * self._size, need)
        try:
            os.posix_fallocate(self.fd, 0, size)
        except OSError as exc:
            raise translate(exc, "record step (journal)") from exc
        self._map.resize(size)
        self._size = size
        self._limit = size - _RESERVE

    def check(self) -> None:
        """Raise, once, an error the committer met since the last ``check`` or ``drain`` (appends
        never raise one: what they wrote stays and is retried); restart a committer that failed."""
        try:
            if self._closed or _error_seq(self._map) == self._error_seq:
                return
        except ValueError:  # closed by another thread just now
            return
        with self._lock:
            if not self._closed and _error_seq(self._map) != self._error_seq:
                self._raise_new_error()

    def _raise_new_error(self) -> None:
        found = fmt.read_error(self._map)
        if found is None:
            return  # being written right now: seen next time
        self._error_seq, code, message = found
        if code == "COMMITTER_FAILED":  # nothing lost: a thread takes over where it stopped
            self._restart_committer()
            return
        raise error_for(code, message)

    # -- the committer -----------------------------------------------------------------------
    def _restart_committer(self) -> None:
        """The committer process died: commit in a thread from now on (it resumes where it was)."""
        if self._closed:
            return
        old, self._host = self._host, start_committer(str(self.path), self.key, self._busy_ms, kind="thread")
        self._cell[0] = self._host
        old.finish(0)

    def _caught_up(self, lap: int, end: int) -> bool:
        progress = fmt.read_progress(self._map)
        return progress is not None and (progress.lap > lap or (progress.lap == lap and progress.offset >= end))

    def drain(self, *, raise_error: bool = True) -> None:
        """Return once every record written so far is committed (or raise why it cannot be, once)."""
        with self._lock:
            if self._closed:
                return
            lap, end, seq = self._lap, self._end, fmt.error_seq(self._map)
        with self._drain_lock:
            while not self._closed and not self._caught_up(lap, end) and fmt.error_seq(self._map) == seq:
                if not self._host.alive():
                    with self._lock:
                        self._restart_committer()
                self._host.poke()
                self._host.wait_ack(1.0)
        if self._closed:
            return
        if raise_error:
            self.check()

    def close(self) -> None:
        """Commit what is pending and stop the committer; the file goes if nothing is left in it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            lap, end = self._lap, self._end
        self._finalizer.detach()
        self._host.finish(CLOSE_WAIT_S)
        with self._drain_lock:  # no drain is reading the map any more
            pass
        with _live_lock:
            _live.get(self.key, weakref.WeakSet()).discard(self)
        if self.fd < 0:
            return
        done = self._caught_up(lap, end)
        self._map.close()
        if done and self.pid == os.getpid():
            self.path.unlink(missing_ok=True)
        os.close(self.fd)  # leftovers are replayed by the next store that opens
        self.fd = -1

    def _forget_in_child(self) -> None:
        self._finalizer.detach()
        self._host.forget()
        self._map.close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _let_go(cell: list[Any]) -> None:
    """A journal collected without ``close``: close its pipes (its committer commits what is left
    and stops) and its file (so its lock is free and the committer may remove it)."""
    host, fd = cell
    host.abandon()
    if fd >= 0:
        os.close(fd)


def parse_journal(data: bytes, *, committed_too: bool = False) -> list[Any]:
    """The uncommitted entries of a journal file's bytes (``committed_too``: from the top of the
    ring, as far as the records there go): ``sqlite_steps`` entries."""
    start = fmt.start_of(data)
    if start is None:
        return []
    if committed_too and len(data) >= fmt.DATA_START + fmt.HEADER.size:
        start = fmt.Progress(fmt.HEADER.unpack_from(data, fmt.DATA_START)[2] or start.lap, fmt.DATA_START)
    payloads, _ = fmt.scan(lambda at, n: data[at : at + n], start, limit=1 << 62)
    return tail.decode(payloads)


_FIRST_HEADER = struct.Struct("<II")  # the first release's records: payload length, crc32


def _parse_first_format(data: bytes) -> list[tuple[Any, ...]]:
    """The rows of a journal the first release wrote (no control page: ``<u32 length><u32 crc32>``
    + a JSON list of rows from offset 0, up to a zero header or a record cut short), so that a
    crash just before an upgrade loses nothing."""
    rows: list[tuple[Any, ...]] = []
    start = 0
    while start + _FIRST_HEADER.size <= len(data):
        n, crc = _FIRST_HEADER.unpack_from(data, start)
        body = data[start + _FIRST_HEADER.size : start + _FIRST_HEADER.size + n]
        if n == 0 or len(body) < n or zlib.crc32(body) != crc:
            break
        try:
            rows.extend(tuple(row) for row in orjson.loads(body))
        except (orjson.JSONDecodeError, TypeError):
            break
        start += _FIRST_HEADER.size + n
    return rows


def recover(key: str, store: Any) -> int:
    """Replay into ``store`` the journals of dead processes on the database ``key`` (rows restored)."""
    folder = journal_folder(key)
    try:
        paths = sorted(folder.glob("*.jnl")) if folder.is_dir() else []
    except OSError:  # an unreadable folder: nothing we may replay
        return 0
    restored = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # gone meanwhile (another opener replayed it) or unreadable
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its process is alive
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read()
            entries = parse_journal(data) if data[:4] == fmt.MAGIC else _parse_first_format(data)
            if entries:
                restored += store.write(
                    lambda c, entries=entries: sqlite_steps.append_new(c.connection.driver_connection, entries),
                    what="replay a step journal",
                )
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return restored


@atexit.register
def _close_all() -> None:
    """At a normal exit, commit what journals still hold (a crash leaves it to the committer)."""
    with _live_lock:
        journals = [j for group in _live.values() for j in group]
    for journal in journals:
        if journal.pid == os.getpid():
            journal.close()


def track_for_fork(store: Any) -> None:
    """Give ``store`` a fresh lock and no journal in a forked child (the parent's threads, which
    may have held them, do not exist there)."""
    _stores.add(store)


def _after_fork_in_child() -> None:
    global _live_lock
    _live_lock = threading.Lock()
    for group in _live.values():
        for journal in group:  # the parent's: let go of its file and pipes
            journal._forget_in_child()
    _live.clear()
    for store in list(_stores):
        store._lock = threading.Lock()
        store._journal = None


os.register_at_fork(after_in_child=_after_fork_in_child)

"""The step journal: how a recorded step becomes durable without a SQLite commit per step.

``append`` copies the step rows into this process's journal file, which is memory-mapped
(``MAP_SHARED``, blocks reserved up front with ``posix_fallocate``): no system call, no file
lock. A thread commits what piled up in the last ``LINGER_S`` to SQLite in one transaction
(sooner when this process reads or writes the store). Once ``append`` returned, the row is in the
kernel's page cache: it survives a crash of the process exactly like a SQLite commit with
``synchronous=NORMAL`` does (neither survives a power cut without fsync).

Records: ``<u32 length><u32 crc32>`` + a JSON list of rows (each the row's values in column
order), then an all-zero header that ends the journal. Once everything is committed the next
record starts again at offset 0; when the committer lags, the file grows.

Files live in ``<db>.steps/<pid>-<random>.jnl``; the owner holds an exclusive ``flock`` on its
file while it lives. A file whose lock can be taken belongs to a process that died: the next
store to open replays it (``recover``, idempotent: rows already in SQLite are skipped).
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from . import step_rows
from .engine import translate
from .errors import RecordingError, StoreBusyError, StoreFullError

__all__ = [
    "StepJournal",
    "drain_local",
    "journal_folder",
    "no_drain",
    "parse_journal",
    "recover",
    "track_for_fork",
]

INITIAL_BYTES = 1 << 16  # the journal file's first size; doubled whenever a record does not fit
LINGER_S = 0.1  # how long a commit waits for more rows (other processes see steps this late)
RETRY_S = 0.2  # wait before retrying a commit that failed on a busy or full store
_tl = threading.local()
_live: dict[str, weakref.WeakSet[StepJournal]] = {}
_live_lock = threading.Lock()
_stores: weakref.WeakSet[Any] = weakref.WeakSet()
_HEADER = struct.Struct("<II")  # payload length, crc32 of the payload
_END = bytes(_HEADER.size)


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


class _Region:
    """The memory-mapped journal file; ``put`` copies one record in."""

    def __init__(self, fd: int, size: int) -> None:
        os.posix_fallocate(fd, 0, size)  # a full disk fails here, never later as SIGBUS on a page
        self.fd, self.size, self.end = fd, size, 0
        self.map = mmap.mmap(fd, size)

    def fits(self, n: int) -> bool:
        return self.end + n + 2 * _HEADER.size <= self.size

    def grow(self, n: int) -> None:
        size = max(2 * self.size, self.end + n + 2 * _HEADER.size)
        os.posix_fallocate(self.fd, 0, size)
        self.map.resize(size)
        self.size = size

    def put(self, payload: bytes) -> None:
        start = self.end
        stop = start + _HEADER.size + len(payload)
        self.map[stop : stop + _HEADER.size] = _END
        self.map[start + _HEADER.size : stop] = payload
        self.map[start : start + _HEADER.size] = _HEADER.pack(len(payload), zlib.crc32(payload))
        self.end = stop


class StepJournal:
    """One process's journal on one store: ``append`` rows, a thread commits them with ``commit``."""

    def __init__(self, key: str, commit: Callable[[list[dict[str, Any]]], None]) -> None:
        tmp = journal_folder(key) / f"{os.getpid()}-{uuid.uuid4().hex}.tmp"
        try:
            tmp.parent.mkdir(exist_ok=True)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise translate(exc, "create the step journal") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # locked before it has the name recovery looks for
            self._region = _Region(fd, INITIAL_BYTES)
        except OSError as exc:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise translate(exc, "create the step journal") from exc
        self.path = tmp.with_suffix(".jnl")
        os.rename(tmp, self.path)
        self.fd, self.pid, self.key = fd, os.getpid(), key
        self._commit = commit
        self._cond = threading.Condition()
        self._pending: list[dict[str, Any]] = []
        self._busy = False
        self._closed = False
        self._urgent = 0  # readers/writers of this process waiting for the commit
        self.error: RecordingError | None = None
        self._thread = threading.Thread(target=self._run, name="openenv-step-journal", daemon=True)
        self._thread.start()
        with _live_lock:
            _live.setdefault(key, weakref.WeakSet()).add(self)

    def append(self, rows: Sequence[dict[str, Any]]) -> None:
        """Make ``rows`` durable (journal write) and queue them for the next commit."""
        payload = orjson.dumps([list(row.values()) for row in rows])
        with self._cond:
            if self.error is not None:
                error, self.error = self.error, None
                raise error
            if self._closed:
                raise RecordingError("record step: the store is closed", code="STORE_CLOSED")
            region = self._region
            if not region.fits(len(payload)) and not (self._pending or self._busy):
                region.end = 0  # everything before is committed: start again at the top
            if not region.fits(len(payload)):
                try:
                    region.grow(len(payload))
                except OSError as exc:
                    raise translate(exc, "record step (journal)") from exc
            region.put(payload)
            if not self._pending:
                self._cond.notify_all()  # wake the committer only when it has nothing to do
            self._pending.extend(rows)

    def queue(self, entry: dict[str, Any]) -> None:
        """Queue a write that needs no journal line (an episode end) behind the rows before it."""
        with self._cond:
            if self._closed:
                raise RecordingError("record step: the store is closed", code="STORE_CLOSED")
            if not self._pending:
                self._cond.notify_all()
            self._pending.append(entry)

    def drain(self, *, raise_error: bool = True) -> None:
        """Return once every appended row is committed (or raise why it cannot be, once)."""
        if threading.current_thread() is self._thread:
            return
        with self._cond:
            self._urgent += 1
            self._cond.notify_all()
            try:
                while (self._pending or self._busy) and self.error is None and self._thread.is_alive():
                    self._cond.wait(1.0)
            finally:
                self._urgent -= 1
            if raise_error and self.error is not None:
                error, self.error = self.error, None
                raise error

    def close(self) -> None:
        """Commit what is pending, stop the thread; the file goes unless rows are left in it."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        with _live_lock:
            _live.get(self.key, weakref.WeakSet()).discard(self)
        if self.fd < 0:
            return
        self._region.map.close()
        if not self._pending and self.pid == os.getpid():
            self.path.unlink(missing_ok=True)
        os.close(self.fd)  # leftovers are replayed by the next store that opens
        self.fd = -1

    def _run(self) -> None:
        _tl.no_drain = True
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                if not (self._closed or self._urgent):  # let more rows join this commit
                    self._cond.wait(LINGER_S)
                batch, self._pending, self._busy = self._pending, [], True
            failed, error = self._commit_batch(batch)
            with self._cond:
                self._busy = False
                if failed:
                    self._pending[:0] = failed
                if error is not None:
                    self.error = error
                self._cond.notify_all()
                if failed:
                    if self._closed:
                        return
                    self._cond.wait(RETRY_S)

    def _commit_batch(
        self, batch: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], RecordingError | None]:
        """Commit ``batch``; returns the rows to retry later (store busy or full) and the error."""
        try:
            self._commit(batch)
            return [], None
        except Exception as exc:  # noqa: BLE001 - reported to the writer, never lost silently
            error = translate(exc, "record step")
        if isinstance(error, (StoreBusyError, StoreFullError)) or len(batch) == 1:
            keep = isinstance(error, (StoreBusyError, StoreFullError))
            return (batch if keep else []), error
        failed: list[dict[str, Any]] = []
        first: RecordingError | None = None
        for row in batch:  # one bad row (a clashing index) must not hold up its neighbours
            more, one = self._commit_batch([row])
            failed += more
            first = first or one
        return failed, first


def parse_journal(data: bytes) -> list[tuple[Any, ...]]:
    """The rows of a journal file, up to its end mark (or a record cut short by a crash)."""
    rows: list[tuple[Any, ...]] = []
    start = 0
    while start + _HEADER.size <= len(data):
        n, crc = _HEADER.unpack_from(data, start)
        body = data[start + _HEADER.size : start + _HEADER.size + n]
        if n == 0 or len(body) < n or zlib.crc32(body) != crc:
            break
        try:
            rows.extend(tuple(row) for row in orjson.loads(body))
        except orjson.JSONDecodeError:
            break
        start += _HEADER.size + n
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
                rows = parse_journal(f.read())
            if rows:
                restored += store.write(
                    lambda c, rows=rows: step_rows.sqlite_replay(c.connection.driver_connection, rows),
                    what="replay a step journal",
                )
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return restored


@atexit.register
def _close_all() -> None:
    """At a normal exit, commit what journals still hold (a crash leaves it to ``recover``)."""
    with _live_lock:
        journals = [j for group in _live.values() for j in group]
    for journal in journals:
        if journal.pid == os.getpid():
            journal.close()


def track_for_fork(store: Any) -> None:
    """Give ``store`` a fresh lock and no journal in a forked child (the parent's commit thread,
    which may have held them, does not exist there)."""
    _stores.add(store)


def _after_fork_in_child() -> None:
    global _live_lock
    _live_lock = threading.Lock()
    for group in _live.values():
        for journal in group:  # the parent's: let go of its file so its lock stays the parent's
            journal._region.map.close()
            if journal.fd >= 0:
                os.close(journal.fd)
    _live.clear()
    for store in list(_stores):
        store._lock = threading.Lock()
        store._journal = None


os.register_at_fork(after_in_child=_after_fork_in_child)

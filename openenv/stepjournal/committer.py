"""The journal committer: tails one writer's journal file and commits its records to SQLite.

It runs as a child process of the recording process (``python -c ... committer.main``, so the
recording's main thread never spends time on SQLite) or, where no child can be started, as a
thread. Both talk to the writer through two pipes: the writer writes any byte to *wake* for an
immediate commit (its reads wait for their steps) and reads one byte from *ack* per wake; end of
file on *wake* means the writer is gone or closing: commit everything, then stop.

Between wakes it polls every ``LINGER_S``. Progress and errors go to the journal's control page
(``format.py``). A batch that fails is kept and retried every ``RETRY_S`` (a busy or full disk,
a missing table, an unreadable file: nothing is dropped), except for a constraint violation: then
the batch goes row by row and only the rows that violate one alone are dropped (and reported).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import sqlite3
import sys
import time
from typing import Any
from urllib.parse import quote

import orjson

from . import format as fmt
from . import sqlite_steps, wire_steps
from .sqlite_steps import WireBatch

__all__ = ["LINGER_S", "RETRY_S", "decode", "main", "run"]

LINGER_S = 0.1  # poll period: how late other processes see steps
RETRY_S = 0.2  # wait before retrying a busy or full store
GIVE_UP_S = 30.0  # once the writer is gone, how long a failing store is retried before leaving it to recovery


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


_SUMMARY, _TIME, _HEAD_SIZE = fmt.STEP_SUMMARY, fmt.STEP_TIME, fmt.STEP_HEAD.size
_HAS_REWARD, _DONE = fmt.HAS_REWARD, fmt.DONE
_STEP, _WIRE, _ROWS, _END, _INSERT = (ord(k) for k in "SWREI")


def decode(payloads: list[bytes]) -> list[Any]:
    """Journal payloads as ``sqlite_steps`` entries, in order: a ``WireBatch`` per episode with
    steps among them (where its first step was), step row tuples, end dicts, ``Insert``s."""
    entries: list[Any] = []
    append, summary, head = entries.append, _SUMMARY.unpack_from, _HEAD_SIZE
    batches: dict[bytes, WireBatch] = {}
    for payload in payloads:
        kind = payload[0]
        if kind == _STEP:  # the hot path: ``WireBatch.add`` inlined, only the fixed head is read
            n, flags, idx, reward = summary(payload)
            key = payload[head : head + n]
            batch = batches.get(key)
            if batch is None:
                batch = batches[key] = WireBatch(_text(key))
                batch.first = idx
                append(batch)
            batch.records.append(payload)
            batch.last = idx
            if flags & _HAS_REWARD:
                batch.rewards.append(reward)
            if flags >= _DONE and batch.done_t is None:
                batch.done_t = _TIME.unpack_from(payload)[0]
        elif kind == _WIRE:  # written by the first ring release: no reward and done in the record
            eid, idx, t, latency, request, reply = fmt.unpack_wire(payload)
            reward, done = wire_steps.outcome(reply)
            key = eid.encode()
            batch = batches.get(key)
            if batch is None:
                batch = batches[key] = WireBatch(eid)
                append(batch)
            batch.add(fmt.pack_step(key, idx, t, latency, reward, done, request, reply))
        elif kind == _ROWS:
            entries.extend(tuple(row) for row in orjson.loads(payload[1:]))
        elif kind == _END:
            append(orjson.loads(payload[1:]))
        elif kind == _INSERT:
            append(sqlite_steps.Insert(*fmt.unpack_insert(payload)))
    return entries


def connect(db_path: str, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection to the existing database (never creating an empty one in its place)."""
    uri = "file:" + quote(os.path.abspath(db_path)) + "?mode=rw"
    raw = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms / 1000, isolation_level=None,
                          check_same_thread=False)  # fmt: skip
    raw.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    raw.execute("PRAGMA synchronous=NORMAL")
    raw.execute("PRAGMA foreign_keys=OFF")  # append_new checks that the episodes exist, once per batch
    return raw


def commit(raw: sqlite3.Connection, entries: list[Any]) -> None:
    """``entries`` in one transaction (idempotent)."""
    raw.execute("BEGIN IMMEDIATE")
    try:
        sqlite_steps.append_new(raw, entries)
        raw.execute("COMMIT")
    except BaseException:
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise


class _Tail:
    """The committer's state for one journal."""

    def __init__(self, journal_path: str, db_path: str, busy_timeout_ms: int) -> None:
        self.path = journal_path
        self.fd = os.open(journal_path, os.O_RDWR | os.O_CLOEXEC)
        self.raw = connect(db_path, busy_timeout_ms)
        control = os.pread(self.fd, fmt.DATA_START, 0)
        self.cursor = fmt.start_of(control) or fmt.Progress(fmt.FIRST_LAP, fmt.DATA_START)
        self.error_seq = fmt.error_seq(control)

    def close(self) -> None:
        self.raw.close()
        os.close(self.fd)

    def report(self, code: str, message: str) -> None:
        self.error_seq += 1
        os.pwrite(self.fd, fmt.error_bytes(self.error_seq, code, message), fmt.ERROR_AT)

    def step(self) -> bool:
        """Commit what the writer has added; ``True`` when caught up (nothing failed)."""
        payloads, cursor = fmt.scan(lambda at, n: os.pread(self.fd, n, at), self.cursor)
        if cursor == self.cursor:
            return True
        entries = decode(payloads)
        if entries and not self._commit(entries):
            return False  # nothing dropped: the same records are offered again
        self.cursor = cursor
        os.pwrite(self.fd, fmt.progress_bytes(cursor), fmt.PROGRESS_AT)
        return True

    def _commit(self, entries: list[Any]) -> bool:
        """Commit ``entries``; ``False`` if they must be offered again (the failure is reported).
        Only a constraint violation sends the batch row by row, dropping the rows that violate one."""
        try:
            commit(self.raw, entries)
            return True
        except (sqlite3.Error, OSError) as exc:
            self.report(sqlite_steps.classify(exc), f"record step: {exc}")
            if not isinstance(exc, sqlite3.IntegrityError) or len(entries) == 1:
                return isinstance(exc, sqlite3.IntegrityError)
        for entry in entries:  # one bad row must not hold up its neighbours
            try:
                commit(self.raw, [entry])
            except sqlite3.IntegrityError as exc:
                self.report(sqlite_steps.classify(exc), f"record step (dropped): {exc}")
            except (sqlite3.Error, OSError) as exc:
                self.report(sqlite_steps.classify(exc), f"record step: {exc}")
                return False  # committing is idempotent: the whole batch comes again
        return True

    def remove_if_orphaned(self) -> None:
        """The writer is gone and everything is committed: remove the file (if its lock is free)."""
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # the writer still holds it (a clean close removes the file itself)
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def run(journal_path: str, db_path: str, wake_fd: int, ack_fd: int, busy_timeout_ms: int = 10_000) -> None:
    """Commit ``journal_path`` into ``db_path`` until end of file on ``wake_fd`` (then finish)."""
    os.set_blocking(ack_fd, False)
    tail = _Tail(journal_path, db_path, busy_timeout_ms)
    try:
        writer_gone_at: float | None = None
        while True:
            wait = LINGER_S if writer_gone_at is None else 0
            woken = False
            if select.select([wake_fd], [], [], wait)[0]:
                if os.read(wake_fd, 4096):
                    woken = True
                elif writer_gone_at is None:
                    writer_gone_at = time.monotonic()
            caught_up = tail.step()
            if woken:
                with contextlib.suppress(BlockingIOError, BrokenPipeError):
                    os.write(ack_fd, b"a")
            if not caught_up:
                time.sleep(RETRY_S)
            if writer_gone_at is not None:
                if caught_up:
                    tail.remove_if_orphaned()
                    return
                if time.monotonic() - writer_gone_at > GIVE_UP_S:
                    return  # left to the next store that opens (``recover``)
    finally:
        tail.close()
        for fd in (wake_fd, ack_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def main() -> None:
    """``committer JOURNAL DB BUSY_MS``: stdin is the wake pipe, stdout the ack pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the writer decides when this ends
    journal_path, db_path, busy_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        run(journal_path, db_path, 0, 1, busy_ms)
    except Exception as exc:  # the writer sees this process gone and commits in a thread instead
        _report_crash(journal_path, f"journal committer failed: {type(exc).__name__}: {exc}")
        raise SystemExit(1) from exc


def _report_crash(journal_path: str, message: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(journal_path, os.O_RDWR | os.O_CLOEXEC)
        try:
            seq = fmt.error_seq(os.pread(fd, fmt.DATA_START, 0)) + 1
            os.pwrite(fd, fmt.error_bytes(seq, "COMMITTER_FAILED", message), fmt.ERROR_AT)
        finally:
            os.close(fd)


if __name__ == "__main__":
    main()

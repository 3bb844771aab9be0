"""Opening a SQLite store whose disk is full: read-only, so its episodes can still be listed,
shown and exported when they matter most.

A WAL database needs a ``-shm`` file that cannot be created on a full disk, and replaying a dead
process's step journal needs room too. When a normal open fails that way and the file's disk has
(almost) no free space, the store is reopened ``immutable`` (no locks, no ``-shm``): correct
because without ``-wal``/``-shm`` files every committed step is in the main file. Journals stay
where they are and are replayed by the first open that has room.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from .errors import RecordingError, StoreFullError
from .schema import SCHEMA_VERSION, read_version

__all__ = ["LOW_SPACE_BYTES", "read_only_engine", "read_only_refusal", "should_open_read_only"]

log = logging.getLogger("openenv.recording")
LOW_SPACE_BYTES = 1 << 20  # below this free, a failed open is treated as "the disk is full"


def _free_bytes(path: str) -> int | None:
    try:
        st = os.statvfs(Path(path).parent)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def should_open_read_only(db_path: str, exc: RecordingError) -> bool:
    """Whether a failed open of ``db_path`` is a full disk a read-only open can get past."""
    free = _free_bytes(db_path)
    if free is None or free >= LOW_SPACE_BYTES or not os.path.isfile(db_path):
        return False
    wal = Path(db_path + "-wal")
    unwritten_wal = wal.is_file() and wal.stat().st_size > 0
    return exc.code in ("STORE_FULL", "RECORDING_ERROR", "STORE_OPEN") and not unwritten_wal


def read_only_engine(db_path: str, display: str) -> Engine:
    """An engine reading ``db_path`` immutably; raises the store's errors when it cannot be read."""
    engine = create_engine(f"sqlite:///file:{db_path}?immutable=1&uri=true",
                           connect_args={"check_same_thread": False, "uri": True})
    try:
        with engine.connect() as conn:
            version = read_version(conn)
    except Exception as exc:
        engine.dispose()
        raise RecordingError(f"open {display} read-only: {type(exc).__name__}: {exc}", code="STORE_OPEN") from exc
    if version != SCHEMA_VERSION:
        engine.dispose()
        raise StoreFullError(f"{display}: the disk is full and the store needs a schema upgrade (version {version} "
                             f"to {SCHEMA_VERSION}): free some space and open it again")
    log.warning("%s: the disk is full; the store is open read-only (free space to record again)", display)
    return engine


def read_only_refusal(display: str) -> StoreFullError:
    """The error every write of a read-only store raises."""
    return StoreFullError(f"{display} is open read-only because its disk was full when it was opened: "
                          "free some space and open the store again to record")

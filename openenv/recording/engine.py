"""Engines for the store: SQLite pragmas, the write transaction, foreign-error translation.

SQLite choices (see docs/episode-format.md): WAL so readers never block the writer and a
commit is one append to the -wal file; ``synchronous=NORMAL`` so a commit needs no fsync (a
committed step survives a crash of the process, not of the machine); ``busy_timeout`` plus
``BEGIN IMMEDIATE`` so a writer waits for the lock up front instead of failing mid-transaction,
with a bounded retry on top.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from openenv.stepjournal.sqlite_steps import classify

from .errors import MissingExtraError, RecordingError, StoreBusyError, StoreCorruptError, StoreFullError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "connect_url",
    "enable_wal",
    "error_for",
    "guarded",
    "make_engine",
    "raw_sqlite_transaction",
    "translate",
    "with_retry",
    "write_transaction",
]

BUSY_TIMEOUT_MS = 10_000
WAL_AUTOCHECKPOINT_PAGES = 4000  # checkpoint (and fsync) every ~16 MB of WAL, not every 4 MB
WRITE_RETRIES = 6
T = TypeVar("T")


def connect_url(target: str | Path) -> str:
    """A SQLAlchemy URL for a path or URL (``postgresql://`` means psycopg 3)."""
    text = str(target)
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser()}"
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    return text


def _sqlite_connect_hook(busy_timeout_ms: int) -> Callable[[sqlite3.Connection, Any], None]:
    def on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (see _on_sqlite_begin)
        cur = dbapi_conn.cursor()
        try:
            cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
            cur.execute("PRAGMA foreign_keys=ON")
        finally:
            cur.close()

    return on_connect


def _on_sqlite_begin(conn: Connection) -> None:
    mode = conn.get_execution_options().get("openenv_begin", "DEFERRED")
    conn.exec_driver_sql(f"BEGIN {mode}")


def make_engine(target: str | Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Engine:
    """Create the engine for ``target`` (a path or a URL); raises ``RecordingError``."""
    url = connect_url(target)
    if url.endswith(":memory:") or url.rstrip("/") == "sqlite:":
        raise RecordingError(
            "in-memory SQLite stores are not supported (each connection would see its own "
            "empty database); use a file, e.g. in a temporary folder",
            code="STORE_URL",
        )
    try:
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(
                url, connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000}
            )
            event.listen(engine, "connect", _sqlite_connect_hook(busy_timeout_ms))
            event.listen(engine, "begin", _on_sqlite_begin)
            return engine
        return create_engine(url, pool_pre_ping=True)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise RecordingError(f"unusable store URL {url!r}: {exc}", code="STORE_URL") from exc
    except ImportError as exc:
        raise MissingExtraError(
            f"the database driver for this URL is not installed ({exc}); for PostgreSQL: "
            "pip install 'psycopg[binary]'",
            extra="postgres",
        ) from exc


def enable_wal(engine: Engine, display: str) -> None:
    """Switch a SQLite file to WAL (persistent); retried while other openers hold locks."""
    for attempt in range(50):
        try:
            with guarded("enable WAL"), engine.connect() as conn:
                raw = conn.connection.driver_connection  # outside any transaction, as the pragma needs
                mode = raw.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    mode = raw.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except StoreBusyError:
            mode = None
        if str(mode).lower() == "wal":
            return
        time.sleep(min(0.01 * (attempt + 1), 0.2))
    raise StoreBusyError(f"could not switch {display} to WAL mode: the file stayed locked")


def _is_busy(exc: BaseException) -> bool:
    return classify(exc) == "STORE_BUSY"


def translate(exc: BaseException, what: str) -> RecordingError:
    """Our error for a foreign one raised while doing ``what``."""
    if isinstance(exc, RecordingError):
        return exc
    orig = getattr(exc, "orig", None) or exc
    return error_for(classify(orig), f"{what}: {_describe(orig)}")


def _describe(exc: BaseException) -> str:
    code, text = classify(exc), str(exc)
    return {
        "STORE_FULL": f"disk full ({text})",
        "STORE_CORRUPT": f"the file is not a usable SQLite database ({text})",
        "STORE_BUSY": f"the store stayed locked ({text})",
        "STORE_OPEN": f"cannot open the database file ({text})",
    }.get(code, f"{type(exc).__name__}: {text}")


def error_for(code: str, message: str) -> RecordingError:
    """The ``RecordingError`` subclass for a store error ``code`` (as ``classify`` gives)."""
    cls = _ERRORS.get(code)
    return cls(message) if cls is not None else RecordingError(message, code=code)


_ERRORS: dict[str, type[RecordingError]] = {
    "STORE_FULL": StoreFullError,
    "STORE_CORRUPT": StoreCorruptError,
    "STORE_BUSY": StoreBusyError,
}


@contextmanager
def guarded(what: str) -> Iterator[None]:
    """Translate foreign errors raised inside the block."""
    try:
        yield
    except (SQLAlchemyError, sqlite3.Error, OSError) as exc:
        raise translate(exc, what) from exc


def with_retry(once: Callable[[], T], *, what: str, retries: int = WRITE_RETRIES) -> T:
    """Call ``once`` (one whole transaction), retrying a bounded number of times while busy."""
    delay = 0.01
    for attempt in range(retries + 1):
        try:
            return once()
        except (SQLAlchemyError, sqlite3.Error, OSError) as exc:
            if not _is_busy(getattr(exc, "orig", None) or exc) or attempt == retries:
                raise translate(exc, what) from exc
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
    raise StoreBusyError(f"{what}: the store stayed locked")  # pragma: no cover - the loop returns or raises


def write_transaction(conn: Connection, fn: Callable[[Connection], T], *, what: str) -> T:
    """Run ``fn`` in one write transaction (``BEGIN IMMEDIATE`` on SQLite), retrying on busy."""

    def once() -> T:
        with conn.begin():
            return fn(conn)

    return with_retry(once, what=what)


def raw_sqlite_transaction(
    raw: sqlite3.Connection, body: Callable[[sqlite3.Connection], None], *, what: str
) -> None:
    """``body(raw)`` in the same kind of transaction on the driver connection itself: the per-step
    hot path on SQLite."""

    def once() -> None:
        raw.execute("BEGIN IMMEDIATE")
        try:
            body(raw)
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise

    with_retry(once, what=what)

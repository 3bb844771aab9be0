"""Errors raised by the episode store, all under ``OpenEnvError``.

    OpenEnvError
     └── RecordingError                  RECORDING_ERROR
          ├── StoreCorruptError          STORE_CORRUPT (not a database / unreadable; nothing written)
          ├── SchemaVersionError         SCHEMA_TOO_NEW (written by a newer release; nothing written)
          ├── StoreBusyError             STORE_BUSY (write lock not won within the retry budget)
          ├── StoreFullError             STORE_FULL (disk or quota full; earlier steps intact)
          ├── EpisodeNotFoundError       EPISODE_NOT_FOUND
          ├── ExportFormatError          EXPORT_FORMAT (a bad JSONL/Parquet line on import)
          └── MissingExtraError          MISSING_EXTRA (optional dependency such as pyarrow absent)

Foreign errors (sqlite3, SQLAlchemy, psycopg, OSError) are translated in ``engine.py``;
nothing from those libraries reaches a caller.
"""

from __future__ import annotations

from openenv.core.errors import OpenEnvError

__all__ = [
    "EpisodeNotFoundError",
    "ExportFormatError",
    "MissingExtraError",
    "RecordingError",
    "SchemaVersionError",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreFullError",
]


class RecordingError(OpenEnvError):
    code = "RECORDING_ERROR"


class StoreCorruptError(RecordingError):
    code = "STORE_CORRUPT"


class SchemaVersionError(RecordingError):
    code = "SCHEMA_TOO_NEW"


class StoreBusyError(RecordingError):
    code = "STORE_BUSY"


class StoreFullError(RecordingError):
    code = "STORE_FULL"


class EpisodeNotFoundError(RecordingError):
    code = "EPISODE_NOT_FOUND"


class ExportFormatError(RecordingError):
    code = "EXPORT_FORMAT"


class MissingExtraError(RecordingError):
    code = "MISSING_EXTRA"

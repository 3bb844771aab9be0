"""Episode recording: store, replay, re-run, diff, export and import (no web UI needed).

    from openenv.recording import EpisodeStore, record
    store = EpisodeStore("episodes.db")    # or EpisodeStore(default_store_target()): the studio's
    async with record(EchoEnv(base_url=url), store=store, label="ppo-run-3") as env:
        result = await env.reset(seed=1)
        result = await env.step(EchoAction(message="hi"))   # durable when this returns

pyarrow (Parquet) and psycopg (PostgreSQL) are optional extras, imported only when used.
"""

from __future__ import annotations

from .default_store import default_store_target
from .diff import Change, Diff, diff
from .episode_format import FORMAT, FORMAT_VERSION
from .errors import (
    EpisodeNotFoundError,
    ExportFormatError,
    MissingExtraError,
    RecordingError,
    SchemaVersionError,
    StoreBusyError,
    StoreCorruptError,
    StoreFullError,
)
from .forking import Fork, ForkReport, fork, fork_sync
from .jsonable import MARKER
from .parquet import export_parquet, import_parquet
from .queries import EpisodeFilter
from .recorder import RecordingEnvClient, SyncRecordingEnvClient, record
from .records import EpisodePage, EpisodeRecord, RunRecord, StepRecord
from .replay import Replay
from .replay_rules import ReplayRules, register_rules, rules_for
from .rerun import RerunReport, rerun, rerun_sync
from .schema import SCHEMA_VERSION
from .store import EpisodeStore
from .transfer import ImportResult, export_jsonl, import_jsonl

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MARKER",
    "SCHEMA_VERSION",
    "Change",
    "Diff",
    "EpisodeFilter",
    "EpisodeNotFoundError",
    "EpisodePage",
    "EpisodeRecord",
    "EpisodeStore",
    "ExportFormatError",
    "Fork",
    "ForkReport",
    "ImportResult",
    "MissingExtraError",
    "RecordingEnvClient",
    "RecordingError",
    "Replay",
    "ReplayRules",
    "RerunReport",
    "RunRecord",
    "SchemaVersionError",
    "StepRecord",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreFullError",
    "SyncRecordingEnvClient",
    "default_store_target",
    "diff",
    "export_jsonl",
    "export_parquet",
    "fork",
    "fork_sync",
    "import_jsonl",
    "import_parquet",
    "record",
    "register_rules",
    "rerun",
    "rerun_sync",
    "rules_for",
]

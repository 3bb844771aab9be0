"""Export/import: JSONL and Parquet round trips restore episodes exactly; bad input is named."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import (
    EpisodeFilter,
    EpisodeStore,
    ExportFormatError,
    RecordingError,
    export_jsonl,
    export_parquet,
    import_jsonl,
    import_parquet,
    record,
)

from .conftest import fill


def _rich(store: EpisodeStore) -> list[str]:
    ids = fill(store, env="echo", label="a", episodes=3, steps=4)
    ids += fill(store, env="repl", label="b", episodes=1, steps=2, done=False, source="human")
    store.set_tags(ids[0], ["good", "look"])
    store.set_notes(ids[0], "notes \u00e9\n2nd line")
    run = store.create_run(env_name="echo", provider="docker", image="echo:1", info={"gpu": None})
    eid = store.start_episode(
        run,
        reset_kwargs={"seed": 3, "opts": {"x": [1, 2]}},
        observation={"t": "\u2603"},
        state={"episode_id": "e", "step_count": 0},
    )
    store.append_step(
        eid,
        1,
        action={"m": b"raw"},
        observation={"blob": object()},
        reward=-0.1,
        metadata={"k": 1},
        latency_ms=0.25,
        state={"step_count": 1},
    )
    return [*ids, eid]


def _dump(store: EpisodeStore) -> str:
    buf = io.StringIO()
    export_jsonl(store, buf)
    return buf.getvalue()


def test_jsonl_round_trip_is_exact(any_store: EpisodeStore, tmp_path: Path) -> None:
    ids = _rich(any_store)
    progress: list[tuple[int, int | None]] = []
    path = tmp_path / "out.jsonl"
    assert export_jsonl(any_store, path, on_progress=lambda d, t: progress.append((d, t))) == len(ids)
    assert progress[-1] == (len(ids), len(ids))
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[-1])
    assert (
        first["format"] == "openenv-episode"
        and first["format_version"] == 1
        and first["steps"][0]["index"] == 0
    )
    with EpisodeStore(tmp_path / "copy.db") as copy:
        result = import_jsonl(copy, path)
        assert (result.imported, result.skipped) == (len(ids), 0)
        assert _dump(copy) == path.read_text(encoding="utf-8")
        assert import_jsonl(copy, path).skipped == len(ids)  # default: skip existing
        with pytest.raises(RecordingError, match="already exists"):
            import_jsonl(copy, path, on_conflict="error")
        assert import_jsonl(copy, path, on_conflict="replace").imported == len(ids)
        assert _dump(copy) == path.read_text(encoding="utf-8")


def test_export_filter_and_ids(store: EpisodeStore) -> None:
    ids = _rich(store)
    buf = io.StringIO()
    assert export_jsonl(store, buf, filters=EpisodeFilter(env="repl")) == 1
    assert json.loads(buf.getvalue())["id"] == ids[3]
    buf = io.StringIO()
    assert export_jsonl(store, buf, episode_ids=[ids[0], ids[1]]) == 2


def test_parquet_round_trip_is_exact(store: EpisodeStore, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    ids = _rich(store)
    path = tmp_path / "out.parquet"
    assert export_parquet(store, path) == len(ids)
    table = pq.read_table(path)
    assert table.num_rows == len(ids) and "steps" in table.column_names
    with EpisodeStore(tmp_path / "copy.db") as copy:
        assert import_parquet(copy, path).imported == len(ids)
        assert _dump(copy) == _dump(store)


def test_empty_parquet_export(store: EpisodeStore, tmp_path: Path) -> None:
    assert export_parquet(store, tmp_path / "e.parquet") == 0
    assert import_parquet(store, tmp_path / "e.parquet").imported == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not JSON"),
        ('{"format": "other"}', "not an openenv-episode record"),
        ('{"format": "openenv-episode", "format_version": 9}', "newer than supported"),
        ('{"format": "openenv-episode", "format_version": 1, "id": 5}', "field 'id' has the wrong type"),
    ],
)
def test_bad_jsonl_lines_are_named(store: EpisodeStore, tmp_path: Path, line: str, message: str) -> None:
    (eid,) = fill(store)
    good = _dump(store)
    with EpisodeStore(tmp_path / "dest.db") as dest:
        with pytest.raises(ExportFormatError, match=message):
            import_jsonl(dest, io.StringIO(good + line + "\n"))
        assert dest.get_episode(eid).step_count == 3  # lines before the bad one stay imported


def test_bad_parquet_file(store: EpisodeStore, tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"nope")
    with pytest.raises(ExportFormatError, match="not a readable Parquet file"):
        import_parquet(store, bad)


def test_export_streams_with_progress(store: EpisodeStore, tmp_path: Path) -> None:
    fill(store, episodes=120, steps=2)
    seen: list[int] = []
    n = export_jsonl(store, tmp_path / "big.jsonl", on_progress=lambda done, total: seen.append(done))
    assert n == 120 and seen == list(range(1, 121))
    assert len((tmp_path / "big.jsonl").read_text().splitlines()) == 120


def test_wire_recorded_episodes_round_trip_and_replace_their_chunks(
    store: EpisodeStore, echo_url: str, tmp_path: Path
) -> None:
    """Episodes recorded from the wire (kept in step chunks) export like any other; importing
    them gives step rows with the same content, and replacing them drops their chunks."""
    with record(EchoEnv(base_url=echo_url).sync(), store=store, label="wire") as env:
        env.reset(seed=2)
        for message in ("a", "\u00e9t\u00e9", "c" * 300):
            env.step(EchoAction(message=message))
    path = tmp_path / "wire.jsonl"
    assert export_jsonl(store, path) == 1
    with EpisodeStore(tmp_path / "copy.db") as copy:
        assert import_jsonl(copy, path).imported == 1
        assert _dump(copy) == path.read_text(encoding="utf-8")
    assert import_jsonl(store, path, on_conflict="replace").imported == 1
    assert store.write(lambda c: c.exec_driver_sql("SELECT COUNT(*) FROM step_chunk").scalar()) == 0
    assert _dump(store) == path.read_text(encoding="utf-8")

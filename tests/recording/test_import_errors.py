"""``openenv episodes import`` on bad files: one clear line (exit 1), no traceback, store unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.recording import EpisodeStore
from openenv.recording.transfer import export_jsonl

OPENENV = [sys.executable, "-m", "openenv.cli.main"]


@pytest.fixture(scope="module")
def good_line(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("src") / "src.db"
    with EpisodeStore(path, journal=False) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={"o": 0}, reset_kwargs={"seed": 3})
        store.append_step(eid, 1, action={"m": 1}, observation={"o": 1}, reward=1.0, done=True)
        out = path.with_suffix(".jsonl")
        export_jsonl(store, out)
    return out.read_text().splitlines()[0]


def _import(tmp_path: Path, src: Path, *extra: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    db = tmp_path / "dest.db"
    proc = subprocess.run([*OPENENV, "episodes", "--db", str(db), "import", *extra, str(src)], capture_output=True,
                          timeout=120, input=stdin)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    assert "Traceback" not in out.stderr, out.stderr
    with EpisodeStore(db) as store:
        out.stdout += f"\n[{store.count_episodes()} stored]"
    return out


def test_bad_utf8_is_a_clear_error(tmp_path: Path, good_line: str) -> None:
    src = tmp_path / "bad.jsonl"
    raw = (good_line + "\n").encode()
    second = json.loads(good_line) | {"id": "f" * 32}
    src.write_bytes(raw + json.dumps(second).encode()[:30] + b"\xff\xfe" + json.dumps(second).encode()[30:] + b"\n")
    out = _import(tmp_path, src)
    assert out.returncode == 1 and "line 2" in out.stderr and "UTF-8" in out.stderr
    assert "[1 stored]" in out.stdout  # the line before it was imported
    piped = _import(tmp_path, Path("-"), stdin=src.read_bytes())
    assert piped.returncode == 1 and "line 2" in piped.stderr


@pytest.mark.parametrize(("field", "value"), [("step_count", 2**70), ("step_count", 2**64 - 1), ("seed", 2**63),
                                              ("fork_step", -(2**63) - 1)])
def test_integers_over_64_bits_are_clear_errors(tmp_path: Path, good_line: str, field: str, value: int) -> None:
    src = tmp_path / "big.jsonl"
    src.write_text(json.dumps(json.loads(good_line) | {field: value}) + "\n")
    out = _import(tmp_path, src)
    assert out.returncode == 1 and f"'{field}' must be an integer that fits in 64 bits" in out.stderr
    assert "[0 stored]" in out.stdout


def test_step_index_over_64_bits(tmp_path: Path, good_line: str) -> None:
    obj = json.loads(good_line)
    obj["steps"][1]["index"] = 2**63
    src = tmp_path / "big.jsonl"
    src.write_text(json.dumps(obj) + "\n")
    out = _import(tmp_path, src)
    assert out.returncode == 1 and "steps[1]" in out.stderr and "[0 stored]" in out.stdout


@pytest.mark.parametrize("column", ["format_version", "steps", "reset_kwargs", "step_count", "id"])
def test_wrong_typed_parquet_columns_are_clear_errors(tmp_path: Path, good_line: str, column: str) -> None:
    import pyarrow as pa  # the test extra has it
    import pyarrow.parquet as pq

    from openenv.recording.parquet import _to_row

    row = _to_row(json.loads(good_line))
    row[column] = {"format_version": "1", "steps": "not a list", "reset_kwargs": 5, "step_count": "many",
                   "id": 12}[column]
    src = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([row]), src)  # the column's type inferred from the wrong value
    out = _import(tmp_path, src)
    assert out.returncode == 1 and "row 1" in out.stderr, out.stderr
    assert "[0 stored]" in out.stdout

"""``openenv episodes``: the real command group on a real store (and one real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.core.generic_client import GenericEnvClient
from openenv.recording import EpisodeStore, record

from .conftest import fill


def run(db: Path, *args: str, input: str | None = None) -> tuple[int, str, str]:  # noqa: A002
    result = CliRunner().invoke(cli, ["episodes", "--db", str(db), *args], input=input)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        result.exception
    )
    return result.exit_code, result.stdout, result.stderr


def test_list_filters_and_pages(db_path: Path) -> None:
    with EpisodeStore(db_path) as s:
        a = fill(s, env="echo", label="alpha", episodes=3)
        b = fill(s, env="repl", label="beta", episodes=2, done=False, source="human")
    code, out, _ = run(db_path, "list")
    assert code == 0 and out.count("\n") == 6 and "STATUS" in out
    code, out, _ = run(db_path, "list", "--env", "repl", "--unfinished")
    assert {line.split()[0] for line in out.splitlines()[1:]} == {i[:12] for i in b}
    code, out, err = run(db_path, "list", "--limit", "2", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 2 and "--cursor" in err
    cursor = err.split("--cursor ")[1].strip().strip("'")
    _, out2, _ = run(db_path, "list", "--json", "--cursor", cursor)
    assert len(out2.splitlines()) == 3
    _, out, _ = run(
        db_path, "list", "--min-return", "5", "--finished", "--label", "alpha", "--since", "2000-01-01"
    )
    assert len(out.splitlines()) == 1 + len(a)


def test_show_by_prefix(db_path: Path) -> None:
    with EpisodeStore(db_path) as s:
        (eid,) = fill(s, steps=4)
        s.set_tags(eid, ["nice"])
    code, out, err = run(db_path, "show", eid[:8], "--limit", "3")
    assert code == 0 and f"episode: {eid}" in out and "nice" in out and "(reset)" in out
    assert '{"message": "m2"}' in out and "--start 3" in err
    code, out, _ = run(db_path, "show", eid, "--json", "--start", "4")
    doc = json.loads(out)
    assert doc["id"] == eid and [s["index"] for s in doc["steps"]] == [4]
    code, _, err = run(db_path, "show", "ffffffff")
    assert code == 1 and "no episode" in err


def test_export_import_round_trip(db_path: Path, tmp_path: Path) -> None:
    with EpisodeStore(db_path) as s:
        ids = fill(s, episodes=3)
    jsonl, parquet = tmp_path / "e.jsonl", tmp_path / "e.parquet"
    code, _, err = run(db_path, "export", str(jsonl))
    assert code == 0 and "exported 3 episode(s)" in err and "3/3" in err
    code, _, _ = run(db_path, "export", str(parquet), "--id", ids[0][:10], "--quiet")
    assert code == 0
    other = tmp_path / "other.db"
    code, out, _ = run(other, "import", str(jsonl))
    assert code == 0 and "imported 3 episode(s), skipped 0" in out
    code, out, _ = run(other, "import", str(parquet))
    assert "imported 0 episode(s), skipped 1" in out
    code, _, err = run(other, "import", str(parquet), "--on-conflict", "error")
    assert code == 1 and "already exists" in err
    code, out, _ = run(db_path, "export", "-", "--quiet")
    assert len(out.splitlines()) == 3
    code, out, _ = run(tmp_path / "third.db", "import", "-", input=out)
    assert "imported 3" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    code, _, err = run(other, "import", str(bad), "--quiet")
    assert code == 1 and "line 1: not JSON" in err


def test_delete(db_path: Path) -> None:
    with EpisodeStore(db_path) as s:
        ids = fill(s, episodes=2)
    code, out, _ = run(db_path, "delete", ids[0], input="n\n")
    assert code == 1
    code, out, _ = run(db_path, "delete", ids[0][:9], "--yes")
    assert code == 0 and "deleted 1 episode(s)" in out
    _, out, _ = run(db_path, "list", "--json")
    assert [json.loads(x)["id"] for x in out.splitlines()] == [ids[1]]


def test_rerun_command(db_path: Path, echo_url: str) -> None:
    with EpisodeStore(db_path, journal=False) as s:  # step rows, for the tampering below
        with record(GenericEnvClient(base_url=echo_url).sync(), store=s) as env:
            env.reset(seed=3)
            env.step({"message": "same"})
            env.step({"message": "x" * 200})
            eid = env.episode_id
        code, out, _ = run(db_path, "rerun", eid, "--url", echo_url)
        assert code == 0 and "no divergence" in out
        s.write(
            lambda c: c.exec_driver_sql(
                "UPDATE step SET observation = ? WHERE episode_id = ? AND idx = 2",
                (json.dumps({"echoed_message": "y" * 200, "message_length": 200}), eid),
            )
        )
    code, out, _ = run(db_path, "rerun", eid[:12], "--url", echo_url)
    assert code == 2 and "diverged at step 2" in out and "echoed_message" in out and "+xxxx" in out


def test_corrupt_store_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"garbage" * 1000)
    code, out, err = run(bad, "list")
    assert code == 1 and "STORE_CORRUPT" in err and "Traceback" not in out + err


def test_entry_point_subprocess(db_path: Path) -> None:
    with EpisodeStore(db_path) as s:
        fill(s, episodes=1)
    env = dict(os.environ, OPENENV_EPISODES_DB=str(db_path))
    proc = subprocess.run(
        [sys.executable, "-m", "openenv.cli.main", "episodes", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["env_name"] == "echo"


def test_a_damaged_step_chunk_is_a_clear_error(db_path: Path) -> None:
    """A step chunk cut short (a file damaged outside our control) is named, not half read:
    ``StoreCorruptError`` from the read that reaches it, a clear message from the CLI; the pages
    before it still read."""
    from openenv.recording import StoreCorruptError
    from openenv.stepjournal import committer
    from openenv.stepjournal import format as fmt

    with EpisodeStore(db_path, journal=False) as s:
        eid = s.start_episode(s.create_run(env_name="echo"), observation={})
    raw = committer.connect(str(db_path), 5000)
    for first in (1, 11):
        records = [fmt.pack_step(eid.encode(), i, 1.0, 0.1, 0.5, False, b'{"data":{"m":%d}}' % i,
                                 b'{"data":{"observation":{"o":%d}}}' % i) for i in range(first, first + 10)]  # fmt: skip
        committer.commit(raw, committer.decode(records))
    raw.execute("UPDATE step_chunk SET data = substr(data, 1, length(data) - 7) WHERE first_idx = 11")
    raw.close()
    with EpisodeStore(db_path) as s:
        assert [x.index for x in s.load_steps(eid, limit=15)] == list(range(15))
        with pytest.raises(StoreCorruptError, match=f"steps 11..20 of episode {eid} are damaged"):
            s.load_steps(eid)
    code, out, err = run(db_path, "show", eid, "--limit", "50")
    assert code != 0 and "steps 11..20" in err and "Traceback" not in out + err

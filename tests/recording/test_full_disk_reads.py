"""A full disk never hides recorded episodes: with a dead process's step journal waiting and no
byte free, the store opens, ``openenv episodes list/export`` work and the studio lists them;
the journal is replayed once there is room."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.recording import EpisodeStore
from openenv.recording.journal import journal_folder
from openenv.stepjournal import format as fmt
from tests._require import require

OPENENV = [sys.executable, "-m", "openenv.cli.main"]


@contextlib.contextmanager
def tiny_disk(tmp_path: Path, size: str = "1m") -> Iterator[Path]:
    require(os.geteuid() == 0, "root, to mount a tiny tmpfs")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(mnt: Path) -> Path:
    """Take every free byte of the tmpfs (bounded: it is a few MB)."""
    filler = mnt / "filler"
    with open(filler, "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            for _ in range(4096):
                f.write(b"\0" * 4096)
    with pytest.raises(OSError):
        (mnt / "probe").write_bytes(b"\0" * 8192)
    return filler


def _recorded_with_a_dead_journal(db: Path) -> tuple[str, int]:
    """An episode with 2 committed steps and 2 more in a journal whose process died."""
    with EpisodeStore(db, journal=False) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={"o": 0})
        store.append_steps([store.step_row(eid, i, action={"m": i}, observation={"o": i}, reward=1.0)
                            for i in (1, 2)])
        later = [list(store.step_row(eid, i, action={"m": i}, observation={"o": i}, reward=1.0).values())
                 for i in (3, 4)]
    folder = journal_folder(str(db.resolve()))
    folder.mkdir(exist_ok=True)
    record = fmt.record(fmt.FIRST_LAP, fmt.pack_rows(later))
    (folder / "4242-dead.jnl").write_bytes(fmt.control_page() + record + bytes(fmt.HEADER.size))
    return eid, 2


def test_a_full_disk_store_opens_lists_and_exports(tmp_path: Path) -> None:
    with tiny_disk(tmp_path) as mnt:
        db = mnt / "e.db"
        eid, committed = _recorded_with_a_dead_journal(db)
        filler = _fill(mnt)
        with EpisodeStore(db) as store:  # used to fail replaying the journal
            assert store.get_episode(eid).step_count == committed
            assert [s.index for s in store.load_steps(eid)] == list(range(committed + 1))
        env = {**os.environ, "OPENENV_EPISODES_DB": str(db)}
        listed = subprocess.run([*OPENENV, "episodes", "list", "--json"], env=env, capture_output=True, text=True,
                                timeout=120)
        assert listed.returncode == 0, listed.stderr
        assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [eid]
        out = tmp_path / "out.jsonl"
        exported = subprocess.run([*OPENENV, "episodes", "export", str(out), "--quiet"], env=env,
                                  capture_output=True, text=True, timeout=120)
        assert exported.returncode == 0, exported.stderr
        assert json.loads(out.read_text().splitlines()[0])["id"] == eid
        assert any(journal_folder(str(db.resolve())).glob("*.jnl"))  # kept for later

        filler.unlink()  # room again: the next open replays the journal
        with EpisodeStore(db) as store:
            assert store.get_episode(eid).step_count == committed + 2
        assert not any(journal_folder(str(db.resolve())).glob("*.jnl"))


def test_the_studio_starts_and_lists_on_a_full_disk(tmp_path: Path) -> None:
    from tests.studio.conftest import make_settings, running_studio

    with tiny_disk(tmp_path) as mnt:
        data = mnt / "studio"  # the studio's data directory and its store, both on the full disk
        data.mkdir()
        eid, _ = _recorded_with_a_dead_journal(data / "episodes.db")
        _fill(mnt)
        with running_studio(make_settings(data)) as url:
            page = httpx.get(f"{url}/episodes", timeout=30)
            assert page.status_code == 200 and eid[:12] in page.text
            shown = httpx.get(f"{url}/episodes/{eid}", timeout=30)
            assert shown.status_code == 200
            export = httpx.get(f"{url}/episodes/{eid}/export", params={"format": "jsonl"}, timeout=30)
            assert export.status_code == 200 and json.loads(export.text.splitlines()[0])["id"] == eid

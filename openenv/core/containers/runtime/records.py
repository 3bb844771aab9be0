"""Process records in a data dir, so a restarted studio can find its env processes again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["RecordStore", "default_data_dir", "process_start_ticks", "tail_lines"]


def default_data_dir() -> Path:
    """``$OPENENV_DATA_DIR`` or ``~/.local/share/openenv``."""
    explicit = os.environ.get("OPENENV_DATA_DIR")
    return Path(explicit) if explicit else Path.home() / ".local" / "share" / "openenv"


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks (Linux), or None if it is gone or a zombie.

    Stored beside the pid so a reused pid is never mistaken for our process.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


class RecordStore:
    """One JSON file per runtime (``<id>.json``) and its log (``<id>.log``) under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, runtime_id: str) -> Path:
        if not runtime_id or "/" in runtime_id or runtime_id.startswith("."):
            raise ValueError(f"bad runtime id {runtime_id!r}")
        return self.root / f"{runtime_id}.json"

    def log_path(self, runtime_id: str) -> Path:
        return self._path(runtime_id).with_suffix(".log")

    def write(self, runtime_id: str, record: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(runtime_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, sort_keys=True))
        os.replace(tmp, path)

    def read(self, runtime_id: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._path(runtime_id).read_text())
        except (OSError, ValueError):
            return None

    def all(self) -> list[dict[str, Any]]:
        if not self.root.is_dir():
            return []
        found = (self.read(p.stem) for p in sorted(self.root.glob("*.json")))
        return [r for r in found if r is not None]

    def remove(self, runtime_id: str) -> None:
        for path in (self._path(runtime_id), self.log_path(runtime_id)):
            path.unlink(missing_ok=True)


def tail_lines(path: Path, lines: int, max_bytes: int = 256 * 1024) -> str:
    """The last ``lines`` lines of a text file (reads at most ``max_bytes`` from its end)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""

"""No tracked file keeps a merge's conflict markers (one once sat in the README for a day)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)


def test_no_tracked_file_has_conflict_markers() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    offenders = []
    for name in files.stdout.splitlines():
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".html", ".toml", ".js", ".css", ".sh", ".txt", ".tmpl", ".cfg", ".yml"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        offenders += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}" for m in _MARKER.finditer(text)]
    assert offenders == []

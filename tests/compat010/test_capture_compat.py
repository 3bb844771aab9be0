"""0.10's capture helpers that TRL's AsyncGRPO harness worker (and engine clients) import from
``openenv.core.harness.capture.upstream``/``compat`` answer as 0.10's do, input for input."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.peer010 import peer010_python, run_with

PROBE = Path(__file__).resolve().parents[1] / "peers010" / "clients" / "capture_compat_probe.py"


def test_capture_helpers_answer_as_010s() -> None:
    theirs = run_with(peer010_python(), PROBE)
    ours = run_with(sys.executable, PROBE)
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    assert ours.returncode == 0, ours.stderr[-2000:]
    mine, published = ours.stdout.splitlines(), theirs.stdout.splitlines()
    assert len(mine) == len(published) > 50
    for got, want in zip(mine, published, strict=True):
        assert got == want

"""The published openenv-core client drives our REPL server, with published-REPL message shapes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests._require import require

pytestmark = pytest.mark.interop
ROOT = Path(__file__).resolve().parents[3]
PEER_PYTHON = ROOT / ".cache" / "peer-openenv-core" / "bin" / "python"


def test_published_client_drives_our_repl_server(repl_url: str) -> None:
    if not PEER_PYTHON.exists() and os.environ.get("OPENENV_REQUIRE_ALL"):
        subprocess.run([str(ROOT / "scripts" / "peer-openenv-core")], check=True, timeout=600)
    require(PEER_PYTHON.exists(), "published openenv-core peer venv (scripts/peer-openenv-core)")
    script = Path(__file__).parent / "peers" / "published_repl_check.py"
    proc = subprocess.run([str(PEER_PYTHON), "-P", str(script), repl_url], cwd="/", capture_output=True,
                          text=True, timeout=120, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["reset"]["context_length"] == 16 and "context" in report["reset"]["available_variables"]
    step = report["step"]
    assert step["observation"]["result"]["stdout"] == "3\n" and step["done"] is False
    assert step["observation"]["result"]["locals_snapshot"] == {"words": "['alpha', 'beta', 'gamma']", "n": "3"}
    final = report["final"]
    assert final["done"] is True and final["observation"]["final_answer"] == "3" and final["reward"] == 1.0
    assert report["state"]["final_answer"] == "3" and report["state"]["iteration"] == 2
    assert report["explicit"]["done"] is True and report["explicit"]["observation"]["final_answer"] == "42"

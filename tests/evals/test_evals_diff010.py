"""``openenv.core.evals`` against the published 0.10 in its own venv: the same probe, the same output
(model schemas and validation errors, ``run_from_config``, the kwargs passed to ``inspect_ai.eval``,
score flattening, the error without inspect-ai)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.peer010 import peer010_python, run_with

PROBE = Path(__file__).parent / "evals_probe.py"


def _probe(python: str) -> dict:
    proc = run_with(python, PROBE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_evals_behave_as_published() -> None:
    theirs = _probe(peer010_python())
    ours = _probe(sys.executable)
    assert ours == theirs
    assert theirs["extract"][0] == {"accuracy": 0.75, "stderr": 0.1, "mean": 3}
    assert theirs["missing"].startswith("inspect-ai is required for InspectAIHarness")
    assert theirs["kwargs"][0] == {"model_args": {"a": 1}, "max_samples": 0, "epochs": 2, "solver": ["s"],
                                   "model_base_url": "http://x", "log_dir": "/tmp/x"}

"""``openenv.training`` and the training-run modules of the recorder: sorted, real ``__all__``; the
training package imports no server or web code."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

MODULES = ["openenv.training", "openenv.training.run", "openenv.training.trl", "openenv.recording.training_runs",
           "openenv.recording.tokens", "openenv.recording.run_export"]  # fmt: skip


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_real(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    assert all(hasattr(module, n) for n in module.__all__)


def test_the_training_package_imports_no_server_web_or_cli_code() -> None:
    code = ("import sys, openenv.training\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('openenv.webui', 'openenv.cli', "
            "'openenv.core.env_server', 'openenv.studio', 'fastapi', 'uvicorn', 'trl', 'torch')))\n"
            "print(bad)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout

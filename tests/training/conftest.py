"""Fixtures for TRL tests: the tiny model taught the echo quick start's tool call, and a runner for
training scripts (a subprocess: TRL's warnings stay out of this process's ``filterwarnings=error``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.training import require_trl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ECHO_PROMPT = [{"role": "user", "content": "Try to echo 'Hello World!' in the environment."}]
SCRIPT_TIMEOUT_S = 400


def echo(message: str) -> str:
    """
    Echo the message back from the environment.

    Args:
        message: The message to echo

    Returns:
        The echoed message.
    """
    return message


@pytest.fixture(scope="session")
def echo_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model, taught to call ``echo`` with "Hello World!" or "hi" after the quick start's prompt."""
    require_trl()
    from tests.training.tiny_model import Lesson, build_tiny, echo_tool_call, tool_schema

    lesson = Lesson(prompts=[ECHO_PROMPT], completions=[echo_tool_call("Hello World!"), echo_tool_call("hi")],
                    tools=[tool_schema(echo)])
    return build_tiny(tmp_path_factory.mktemp("echo-model") / "tiny", teach=[lesson])


def run_training(script: Path, *args: str, out: Path) -> list[dict[str, Any]]:
    """Run a training script (``script *args out``) with this repo's openenv, offline; returns the
    trainer's log history the script wrote to ``out/log_history.json``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", TRL_EXPERIMENTAL_SILENCE="1", TOKENIZERS_PARALLELISM="false",
               OMP_NUM_THREADS="1")  # fmt: skip
    proc = subprocess.run([sys.executable, str(script), *args, str(out)], cwd=str(out.parent), env=env,
                          capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((out / "log_history.json").read_text())


def step_logs(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-step entries of a log history (not the final summary)."""
    return [h for h in history if "reward" in h]

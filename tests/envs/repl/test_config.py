"""REPL settings: parsing, validation, and that each one is documented."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from openenv.envs.repl.config import PREFIX, Limits
from openenv.envs.repl.rewards import RewardConfig

DOC = Path(__file__).resolve().parents[3] / "docs" / "repl-security.md"


def test_from_env_reads_prefixed_variables() -> None:
    limits = Limits.from_env({"OPENENV_REPL_CELL_TIMEOUT_S": "2.5", "OPENENV_REPL_NETWORK": "yes",
                              "OPENENV_REPL_MEMORY_MB": "256"}, max_processes=8)
    assert limits.cell_timeout_s == 2.5 and limits.network is True
    assert limits.memory_mb == 256 and limits.max_processes == 8
    assert limits.rlimits()["RLIMIT_AS"] == 256 << 20


@pytest.mark.parametrize("env", [{"OPENENV_REPL_MEMORY_MB": "lots"}, {"OPENENV_REPL_CELL_TIMEOUT_S": "0"}])
def test_invalid_settings_are_rejected(env: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="OPENENV_REPL_|must be positive"):
        Limits.from_env(env)


def test_unknown_metric_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        RewardConfig(metric="fuzzy")


def test_every_setting_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for f in fields(Limits):
        assert f"{PREFIX}{f.name.upper()}" in text, f.name
    for name in ("BASE_URL", "MODEL", "API_KEY", "TIMEOUT_S", "MAX_CALLS", "MAX_PROMPT_CHARS", "MAX_TOKENS",
                 "CONCURRENCY"):
        assert f"OPENENV_REPL_LLM_{name}" in text, name
    assert "OPENENV_REPL_MAX_ITERATIONS" in text

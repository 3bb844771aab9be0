"""Rubrics (RFC 004): the same probe script gives the same output on ours and on the published 0.10."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from openenv.core.env_server.interfaces import Environment
from openenv.core.rubrics import Rubric, Sequential, WeightedSum
from tests.peer010 import peer010_python, run_with

PROBE = Path(__file__).parents[1] / "peers010" / "clients" / "rubric_probe.py"


def _cases(python: str) -> list[dict[str, Any]]:
    done = run_with(python, PROBE)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_rubric_probe_matches_published() -> None:
    ours = _cases(sys.executable)
    theirs = _cases(peer010_python())
    assert [c["case"] for c in ours] == [c["case"] for c in theirs]
    for mine, published in zip(ours, theirs, strict=True):
        assert mine == published, mine["case"]
    by_case = {c["case"]: c for c in ours}
    assert by_case["sequential"]["value"][0] == pytest.approx(0.8)
    assert by_case["trajectory"]["value"][1] == [0.125, 0.25, 0.5, 1.0]


class _Half(Rubric):
    def forward(self, action: Any, observation: Any) -> float:
        return 0.5


class _AsyncOne(Rubric):
    async def forward(self, action: Any, observation: Any) -> float:
        return 1.0


class _Env(Environment):
    def __init__(self, rubric: Rubric | None = None) -> None:
        super().__init__(rubric=rubric)
        self.resets = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        self._reset_rubric()
        return {}

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        return {"reward": self._apply_rubric(action, {})}


def test_environment_rubric_hooks() -> None:
    env = _Env(WeightedSum([_Half(), _Half()], [0.5, 0.5]))
    assert env.step(None)["reward"] == 0.5
    assert [name for name, _ in env.rubric.named_rubrics()] == ["rubric_0", "rubric_1"]
    assert _Env().step(None)["reward"] == 0.0
    assert _Env()._apply_transform({"x": 1}) == {"x": 1}


def test_environment_async_rubric_hooks() -> None:
    env = _Env(Sequential(_Half(), _AsyncOne()))

    async def run() -> tuple[float, float]:
        await env._reset_rubric_async()
        return await env._apply_rubric_async(None, {}), await _Env()._apply_rubric_async(None, {})

    assert asyncio.run(run()) == (1.0, 0.0)


def test_subclass_without_super_init_still_has_hooks() -> None:
    class Bare(Environment):
        def reset(self, seed=None, episode_id=None, **kwargs):  # noqa: ANN001, ANN202
            return {}

        def step(self, action, timeout_s=None, **kwargs):  # noqa: ANN001, ANN202
            return {}

    env = Bare()
    assert env.rubric is None and env.transform is None
    assert env._apply_rubric(None, {}) == 0.0
    env._reset_rubric()
    assert env.render_web({}) is None and env.web_actions({}) == []

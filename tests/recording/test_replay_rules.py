"""Replay rules: a re-run or fork of an env whose observations carry measured timings (as the
REPL's do) and float noise does not diverge on them under that env's rules, still diverges on a
real change, and its report names the rules and what they let pass."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from openenv.core import GenericEnvClient
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from openenv.recording import EpisodeStore, ReplayRules, diff, fork_sync, record, rerun_sync, rules_for
from tests.server_utils import running_server


class CellAction(Action):
    code: str = ""


class CellObservation(Observation):
    stdout: str = ""
    execution_time: float = 0.0
    score: float = 0.0


class CellEnvironment(Environment):
    """Runs "cells": stdout is the code echoed back (or BROKEN once ``broken`` is set), the time a
    fresh random number, the score a sum that differs in its last bits from run to run."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True
    broken: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CellObservation:
        self._state = State(episode_id=episode_id or "cells")
        return CellObservation(stdout="ready", execution_time=random.random())

    def step(self, action: CellAction, timeout_s: float | None = None, **kwargs: Any) -> CellObservation:
        self._state.step_count += 1
        parts = [0.1, 0.2, 0.3]
        random.shuffle(parts)
        out = "BROKEN" if type(self).broken and self._state.step_count == 2 else action.code
        return CellObservation(stdout=out, execution_time=random.random(), score=sum(parts), reward=sum(parts))

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture()
def cells_url() -> Iterator[str]:
    CellEnvironment.broken = False
    with running_server(create_app(CellEnvironment, CellAction, CellObservation, env_name="repl",
                                   max_concurrent_envs=4)) as url:
        yield url


def _recorded(store: EpisodeStore, url: str) -> str:
    with record(GenericEnvClient(base_url=url).sync(), store=store, env_name="repl") as env:
        env.reset(seed=1)
        for code in ("a = 1", "print(a)", "a + 1"):
            env.step({"code": code})
        eid = env.episode_id
    store.flush()
    return eid


def test_rules_by_env_name_and_what_they_let_pass() -> None:
    assert rules_for("repl") is rules_for("REPL") is rules_for("repl-2")
    assert rules_for("echo") is rules_for(None)
    rules = rules_for("repl")
    kept, passed = rules.apply(diff({"out": "1", "execution_time": 0.1, "x": {"execution_time": 2}, "f": 0.3},
                                    {"out": "2", "execution_time": 0.2, "x": {"execution_time": 3},
                                     "f": 0.1 + 0.2}))  # fmt: skip
    assert kept.paths == ["out"]
    assert sorted(c.path for c in passed) == ["execution_time", "f", "x.execution_time"]
    assert "execution_time" in rules.describe()


def test_a_rerun_passes_timings_and_float_noise_and_reports_them(tmp_path: Path, cells_url: str) -> None:
    with EpisodeStore(tmp_path / "e.db") as store:
        eid = _recorded(store, cells_url)
        with GenericEnvClient(base_url=cells_url).sync() as client:
            report = rerun_sync(store, eid, client)
        assert report.deterministic, report.describe()
        assert report.passed and report.passed.get("execution_time", 0) >= 3
        assert "execution_time" in report.rules
        with GenericEnvClient(base_url=cells_url).sync() as client:
            strict = rerun_sync(store, eid, client, rules=ReplayRules())
        assert strict.diverged_at == 0 and strict.observation_diff.paths == ["execution_time"]
        CellEnvironment.broken = True
        with GenericEnvClient(base_url=cells_url).sync() as client:
            real = rerun_sync(store, eid, client)
        assert real.diverged_at == 2 and real.observation_diff.paths == ["stdout"]


def test_a_fork_replays_under_the_same_rules(tmp_path: Path, cells_url: str) -> None:
    with EpisodeStore(tmp_path / "f.db") as store:
        eid = _recorded(store, cells_url)
        with GenericEnvClient(base_url=cells_url).sync() as client:
            forked = fork_sync(store, eid, client, step=3)
            assert not forked.report.diverged and forked.report.replayed == 3


def test_a_fork_keeps_who_took_each_replayed_step(tmp_path: Path, cells_url: str) -> None:
    with EpisodeStore(tmp_path / "a.db") as store:
        with record(GenericEnvClient(base_url=cells_url).sync(), store=store, env_name="repl") as env:
            env.reset()
            env.step({"code": "1"})
            env.record_turn("model", {"completion": "1"})
            env.step({"code": "2"})
            env.record_turn("human")
            env.step({"code": "3"})
            eid = env.episode_id
        with GenericEnvClient(base_url=cells_url).sync() as client:
            forked = fork_sync(store, eid, client, step=3)
            child = forked.report.episode_id
        store.flush()
        steps = store.load_steps(child)
        assert [(s.actor, s.agent) for s in steps] == [(None, None), ("model", {"completion": "1"}), ("human", None),
                                                        (None, None)]  # fmt: skip

"""HarnessEnvironment over the real fake harness process: episodes, tools injected and callable in
every episode, rubric and transform, hang/crash/close ending with named errors and no process left."""

from __future__ import annotations

import json
import os
import time

import pytest

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Action
from openenv.core.harness import (
    HarnessAction,
    HarnessEnvironment,
    HarnessNotRunningError,
    HarnessStartupError,
)

from .conftest import wait_gone
from .fake_adapter import FakeHarnessAdapter, fake_config
from .harness_app import build_mcp


def _env(**config) -> HarnessEnvironment:
    return HarnessEnvironment(FakeHarnessAdapter(fake_config(**config)), mcp=build_mcp())


def _whoami(env) -> dict:
    return json.loads(env.step(HarnessAction(message="whoami")).metadata["response"])


def test_renamed_tools_work_in_every_episode_and_the_harness_runs_in_its_own_group(tmp_path):
    env = _env(working_directory=str(tmp_path))
    try:
        seen = []
        for episode in range(2):
            first = env.reset(episode_id=f"ep-{episode}")
            assert first.metadata == {"episode_id": f"ep-{episode}", "injected_tools": ["add", "env_read_file"]}
            assert env.adapter.injected["mcp_url"].startswith("http://127.0.0.1:")
            obs = env.step(HarnessAction(message='tool env_read_file {"path": "notes.txt"}'))
            assert obs.metadata["response"] == "env_read_file -> remember the milk", episode
            who = _whoami(env)
            assert who["pgid"] == who["pid"] != os.getpgid(0) and who["cwd"] == str(tmp_path)
            seen.append(who["pid"])
            assert env.state.step_count == 2
        assert seen[0] != seen[1] and wait_gone(seen[0], 5)  # reset replaced the first harness
    finally:
        env.close()
    assert wait_gone(seen[1], 5)


def test_close_kills_the_harness_and_what_it_spawned(reap_pids):
    env = _env()
    env.reset()
    pid = _whoami(env)["pid"]
    child = int(env.step(HarnessAction(message="spawn")).metadata["response"].split()[1])
    reap_pids.extend([pid, child])
    env.close()
    assert wait_gone(pid, 5) and wait_gone(child, 5)
    env.close()  # idempotent


def test_hang_ends_at_the_turn_budget_with_a_terminal_observation(reap_pids):
    env = _env(session_timeout_s=1.0)
    try:
        env.reset()
        pid = _whoami(env)["pid"]
        reap_pids.append(pid)
        started = time.monotonic()
        obs = env.step(HarnessAction(message="hang"))
        assert time.monotonic() - started < 8
        assert obs.done is True and obs.metadata["error_type"] == "turn_timeout"
        assert obs.metadata["error"] == "harness turn exceeded 1.0 seconds"
        assert wait_gone(pid, 5)
        assert env.trajectory[-1].type.value == "error"
        with pytest.raises(HarnessNotRunningError):
            env.step(HarnessAction(message="hello"))
        # a per-call budget overrides the config's
        env.reset()
        obs = env.step(HarnessAction(message="hang"), timeout_s=0.5)
        assert obs.metadata["error"] == "harness turn exceeded 0.5 seconds"
    finally:
        env.close()


def test_a_harness_killed_between_turns_is_reported_crashed():
    env = _env()
    try:
        env.reset()
        pid = _whoami(env)["pid"]
        os.kill(pid, 9)
        assert wait_gone(pid, 5)
        obs = env.step(HarnessAction(message="hello"))
        assert obs.done and obs.metadata["error_type"] == "harness_crashed"
        assert obs.metadata["error"] == "harness process is not running"
    finally:
        env.close()


def test_startup_failure_and_wrong_actions_are_named():
    env = HarnessEnvironment(FakeHarnessAdapter(fake_config(command=["/nonexistent/harness"])), mcp=build_mcp())
    with pytest.raises(HarnessStartupError):
        env.reset()
    assert env._bridge is None or env._bridge.url is None  # the bridge was stopped with it
    env.close()
    env = _env()
    try:
        env.reset()
        with pytest.raises(TypeError, match="only accepts HarnessAction"):
            env.step(Action())
        listed = env.step(ListToolsAction())
        assert sorted(t.name for t in listed.tools) == ["add", "read_file"]
        called = env.step(CallToolAction(tool_name="add", arguments={"a": 1, "b": 2}))
        assert called.result.data == 3
    finally:
        env.close()


def test_reserved_tool_names_are_refused():
    from fastmcp import FastMCP

    mcp = FastMCP("bad")

    @mcp.tool
    def step(x: int) -> int:
        """A tool squatting on the orchestration name."""
        return x

    with pytest.raises(ValueError, match="reserved"):
        HarnessEnvironment(FakeHarnessAdapter(), mcp=mcp)


def test_rubric_scores_each_turn_and_transform_applies():
    class Length:
        def __init__(self):
            self.resets = 0

        def __call__(self, action, observation):
            return float(len(observation.metadata["response"]))

        def reset(self):
            self.resets += 1

    def tag(observation):
        observation.metadata["tagged"] = True
        return observation

    rubric = Length()
    env = HarnessEnvironment(FakeHarnessAdapter(), mcp=build_mcp(), rubric=rubric, transform=tag)
    try:
        assert env.reset().metadata["tagged"] is True and rubric.resets == 1
        obs = env.step(HarnessAction(message="hi"))
        assert obs.reward == float(len("echo: hi (turn 1)")) and obs.metadata["tagged"] is True
    finally:
        env.close()


def test_no_tools_means_no_bridge():
    env = HarnessEnvironment(FakeHarnessAdapter())
    try:
        assert env.reset().metadata["injected_tools"] == []
        assert env.adapter.injected == {"mcp_url": None, "tools": []}
        assert env.step(HarnessAction(message="done")).done is True
    finally:
        env.close()

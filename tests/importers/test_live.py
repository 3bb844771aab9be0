"""``openenv serve verifiers:...`` / ``ors:...``: verifiers envs played turn by turn, ORS sessions, bad targets."""

from __future__ import annotations

import httpx
import pytest

from openenv.core import GenericEnvClient
from tests.importers.helpers import SOURCES, cli, need, serving


@pytest.fixture(scope="module")
def vf_urls():
    need("verifiers")
    with (serving(f"verifiers:{SOURCES / 'vf_single' / 'vf_single.py'}:n=4") as single,
          serving(f"verifiers:{SOURCES / 'vf_multi'}") as multi,
          serving(f"verifiers:{SOURCES / 'vf_tools' / 'vf_tools.py'}") as tools):  # fmt: skip
        yield {"single": single, "multi": multi, "tools": tools}


def test_single_turn_rubric_of_several_functions(vf_urls) -> None:
    with GenericEnvClient(base_url=vf_urls["single"]).sync() as env:
        first = env.reset(seed=7)  # 7 % 4 rows -> row 3
        assert first.observation["messages"] == [{"role": "user", "content": "What is 3 + 3?"}]
        assert not first.done and first.observation["metadata"]["index"] == 3
        result = env.step({"message": "6"})
        assert result.done and result.reward == pytest.approx(1.5)
        metrics = result.observation["metadata"]["metrics"]
        assert (metrics["exact"], metrics["short"], metrics["num_turns"]) == (1.0, 1.0, 1.0)
        assert result.observation["messages"][-1] == {"role": "assistant", "content": "6"}
        env.reset(seed=7)
        half = env.step({"message": "seven"})
        assert half.reward == 0.0 and half.observation["metadata"]["metrics"]["exact"] == 0.0
        assert env.reset(seed=7).observation["messages"] == first.observation["messages"]  # seed decides the row


def test_multi_turn_until_the_env_says_done(vf_urls) -> None:
    with GenericEnvClient(base_url=vf_urls["multi"]).sync() as env:
        env.reset(index=1)  # the answer is 7
        low = env.step({"message": "2"})
        assert not low.done and low.reward is None
        assert low.observation["new_messages"][-1] == {"role": "user", "content": "higher"}
        high = env.step({"message": "9"})
        assert high.observation["new_messages"][-1]["content"] == "lower"
        hit = env.step({"message": "7"})
        assert hit.done and hit.reward == 1.0
        assert hit.observation["metadata"]["metrics"]["num_turns"] == 3.0
        assert hit.observation["metadata"]["stop_condition"] == "has_final_env_response"
        assert [m["content"] for m in hit.observation["messages"] if m["role"] == "assistant"] == ["2", "9", "7"]


def test_tool_env_one_tool_call_per_step(vf_urls) -> None:
    with GenericEnvClient(base_url=vf_urls["tools"]).sync() as env:
        first = env.reset(seed=0)
        assert [t["name"] for t in first.observation["tools"]] == ["add"]
        called = env.step({"tool_calls": [{"name": "add", "arguments": {"a": 17, "b": 25}}]})
        assert not called.done
        assert called.observation["new_messages"][-1]["role"] == "tool"
        assert called.observation["new_messages"][-1]["content"] == "42"
        bad = env.step({"tool_calls": [{"name": "add", "arguments": "{not json"}]})
        assert not bad.done and bad.observation["new_messages"][-1]["role"] == "tool"  # the env's own error text
        final = env.step({"message": "42"})
        assert final.done and final.reward == 1.0
        metrics = final.observation["metadata"]["metrics"]
        assert (metrics["correct"], metrics["add_calls"], metrics["total_tool_calls"]) == (1.0, 2.0, 2.0)


def test_task_api_and_task_index(vf_urls) -> None:
    url = vf_urls["single"]
    name = "vf_single"
    splits = httpx.get(f"{url}/{name}/splits").json()
    assert splits == [{"name": "train", "type": "train"}]
    assert httpx.post(f"{url}/{name}/num_tasks", json={"split": "train"}).json()["num_tasks"] == 4
    task = httpx.post(f"{url}/{name}/task", json={"split": "train", "index": 2}).json()
    assert task["task"]["answer"] == "4"
    with GenericEnvClient(base_url=url).sync() as env:
        assert env.reset(split="train", index=2).observation["messages"][-1]["content"] == "What is 2 + 2?"
        with pytest.raises(Exception, match="out of range"):
            env.reset(split="train", index=9)


def test_bad_action_is_a_validation_error(vf_urls) -> None:
    with GenericEnvClient(base_url=vf_urls["single"]).sync() as env:
        env.reset(seed=0)
        with pytest.raises(Exception, match="(?i)validation|tool_calls"):
            env.step({"tool_calls": "nope"})


def test_ors_live() -> None:
    need("openreward")
    with serving(f"ors:{SOURCES / 'ors_quiz' / 'quiz.py'}") as url, GenericEnvClient(base_url=url).sync() as env:
        first = env.reset(seed=0)
        assert first.observation["metadata"]["prompt"][0]["text"] == "What is the capital of France?"
        wrong = env.step({"type": "call_tool", "tool_name": "submit", "arguments": {"city": "Lyon"}})
        assert wrong.done and wrong.reward == 0.0 and wrong.observation["metadata"]["exact"] == 0.0
        env.reset(index=1)
        missing = env.step({"type": "call_tool", "tool_name": "nope", "arguments": {}})
        assert not missing.done and missing.observation["error"]["error_type"] == "tool_not_found"
        right = env.step({"type": "call_tool", "tool_name": "submit", "arguments": {"city": "Tokyo"}})
        assert right.done and right.reward == 1.0


@pytest.mark.parametrize(("target", "message"), [
    ("verifiers:no_such_module_xyz", "no module named 'no_such_module_xyz'"),
    (f"verifiers:{SOURCES / 'not_an_env'}", "Looked for verifiers: a module importing verifiers"),
    (f"verifiers:{SOURCES / 'vf_single' / 'vf_single.py'}:n", "write key=value"),
    (f"verifiers:{SOURCES / 'vf_single' / 'vf_single.py'}:{{\"bogus\": 1, \"n\": \"x\"}}", "load_environment(bogus, n) failed"),
    (f"ors:{SOURCES / 'ors_quiz' / 'quiz.py'}:Nope", "expected one ORS Environment subclass named Nope"),
])  # fmt: skip
def test_bad_live_targets_are_clear(target: str, message: str) -> None:
    need("verifiers")
    need("openreward")
    done = cli("serve", target, "--port", "0", timeout=120)
    assert done.returncode != 0
    assert message in done.stderr and "Traceback" not in done.stderr


def test_stateful_tool_env_keeps_state_per_episode() -> None:
    need("verifiers")
    call = {"tool_calls": [{"name": "note", "arguments": {"text": "x"}}]}
    with (serving(f"verifiers:{SOURCES / 'vf_stateful' / 'vf_stateful.py'}") as url,
          GenericEnvClient(base_url=url).sync() as a, GenericEnvClient(base_url=url).sync() as b):  # fmt: skip
        tools = a.reset(seed=0).observation["tools"]
        assert [t["name"] for t in tools] == ["note"]
        assert "notebook" not in tools[0]["parameters"]["properties"]  # injected by the env, not the model's
        b.reset(seed=0)
        assert a.step(call).observation["new_messages"][-1]["content"] == "1 note(s)"
        assert b.step(call).observation["new_messages"][-1]["content"] == "1 note(s)"
        assert a.step(call).observation["new_messages"][-1]["content"] == "2 note(s)"
        done_a, done_b = a.step({"message": "done"}), b.step({"message": "done"})
        assert done_a.done and done_a.reward == 1.0 and done_a.observation["metadata"]["metrics"]["note_calls"] == 2.0
        assert done_b.done and done_b.reward == 0.0


def test_live_verifiers_server_passes_validate(vf_urls) -> None:
    done = cli("validate", vf_urls["multi"], timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ws.step_after_done    done after 5 step(s)" in done.stdout

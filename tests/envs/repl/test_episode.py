"""Finishing, iteration counting, rewards and the published surface of the REPL env."""

from __future__ import annotations

import pytest

from openenv.envs.repl.models import REPLAction
from openenv.envs.repl.rewards import RewardConfig
from tests.envs.repl.conftest import run


@pytest.mark.parametrize(
    ("code", "answer"),
    [
        ("FINAL('a (b) c')", "a (b) c"),
        ("print(FINAL(f'f({1 + 1})'))", "f(2)"),
        ("x = 'from var'\nFINAL_VAR('x')", "from var"),
        ("x = 'printed var'\nprint('FINAL_VAR(x)')", "printed var"),
        ("total = 17\nFINAL_VAR(total)", "17"),
        ("n = 3\nprint(f'FINAL({n * (n + 1)})')", "12"),
        ("answer['content'] = 'dict style'\nanswer['ready'] = True", "dict style"),
        ("answer = {'content': 42, 'ready': True}", "42"),
    ],
)
def test_finish_helpers(make_env, code: str, answer: str) -> None:
    obs = run(make_env(), code)
    assert obs.done and obs.final_answer == answer and obs.termination == "final"
    assert obs.metadata["final_answer"] == answer  # where in-process users of the published env look


def test_final_var_of_a_missing_name_is_an_error(make_env) -> None:
    obs = run(make_env(), "FINAL_VAR('nope')")
    assert not obs.done and "NameError" in obs.result.exception


def test_printing_final_text_does_not_finish(make_env) -> None:
    env = make_env(reset={"context": "notes: FINAL(not an answer)"})
    obs = run(env, "print(context)\nprint('FINAL(' + 'x)')\ns = 'FINAL(y)'\nprint(s)")
    assert "FINAL(not an answer)" in obs.result.stdout
    assert not obs.done and obs.final_answer is None


def test_is_final_with_answer(make_env) -> None:
    env = make_env()
    obs = env.step(REPLAction(is_final=True, final_answer="explicit"))
    assert obs.done and obs.final_answer == "explicit" and obs.iteration == 0
    assert env.state.final_answer == "explicit"


def test_max_iterations_counts_executed_cells_exactly(make_env) -> None:
    env = make_env(reset={"max_iterations": 3})
    seen = [run(env, f"i = {i}") for i in range(3)]
    assert [o.iteration for o in seen] == [1, 2, 3]
    assert [o.done for o in seen] == [False, False, True]
    assert seen[-1].termination == "max_iterations" and seen[-1].result.locals_snapshot == {"i": "2"}
    after = run(env, "i = 99")
    assert after.done and "EpisodeDone" in after.result.exception and env.state.iteration == 3


def test_rewards(make_env) -> None:
    rewards = RewardConfig(success=1.0, error_penalty=-0.05, exhausted_penalty=-0.1)
    env = make_env(rewards=rewards, reset={"expected_answer": "7", "max_iterations": 5})
    assert run(env, "1/0").reward == -0.05
    assert run(env, "x = 7").reward == 0.0
    assert run(env, "FINAL(x)").reward == 1.0
    env.reset(expected_answer="7")
    assert run(env, "FINAL(8)").reward == 0.0
    env.reset(max_iterations=1)
    assert run(env, "y = 1").reward == -0.1
    numeric = make_env(rewards=RewardConfig(metric="numeric"), reset={"expected_answer": "1,000"})
    assert run(numeric, "FINAL(1000.0)").reward == 1.0


def test_expected_answer_is_not_visible_to_cells(make_env) -> None:
    env = make_env(reset={"expected_answer": "the-hidden-answer"})
    out = run(env, "import gc\nany('the-hidden-answer' in str(o) for o in gc.get_objects() if isinstance(o, str))")
    assert out.result.stdout == "False\n"


def test_reset_surface_and_state(make_env) -> None:
    env = make_env()
    obs = env.reset(context="abcdef" * 200, task_prompt="count", seed=3, episode_id="ep-1", hf_token="ignored")
    assert obs.context_length == 1200 and len(obs.context_preview) == 500
    assert {"context", "task_prompt", "answer"} <= set(obs.available_variables)
    assert run(env, "import random\nrandom.random()").result.stdout == run(
        make_env(reset={"seed": 3}), "import random\nrandom.random()").result.stdout
    state = env.state
    assert state.episode_id == "ep-1" and state.task_prompt == "count" and state.iteration == 1
    assert state.total_execution_time > 0 and "context" in state.namespace_keys


def test_a_seed_beyond_64_bits_reaches_the_worker(make_env) -> None:
    big = 10**30  # orjson refuses it; the command line falls back to the stdlib encoder
    draws = [run(make_env(reset={"seed": big}), "import random\nrandom.random()").result.stdout for _ in range(2)]
    assert draws[0] == draws[1] != run(make_env(reset={"seed": 3}), "import random\nrandom.random()").result.stdout


def test_state_follows_the_cells_and_is_a_fresh_model_each_read(make_env) -> None:
    env = make_env(reset={"max_iterations": 5})
    run(env, "a = 1")
    first = env.state
    run(env, "b = 2")
    second = env.state
    assert (first.iteration, second.iteration) == (1, 2) and second.step_count == 2
    assert {"a", "b"} <= set(second.namespace_keys) and "b" not in first.namespace_keys
    assert second.max_iterations == 5 and type(second).__name__ == "REPLState"


def test_helpers_survive_a_worker_restart(make_env) -> None:
    env = make_env(reset={"context": "ctx"})
    assert run(env, "import os\nos._exit(1)").namespace_lost
    assert run(env, "FINAL(context)").final_answer == "ctx"


def test_worker_that_cannot_start_is_a_clear_error(make_env) -> None:
    from openenv.core.errors import EnvExecutionError
    from openenv.envs.repl.environment import REPLEnvironment
    from tests.envs.repl.conftest import test_limits

    env = REPLEnvironment(limits=test_limits(python="/nonexistent/python3"))
    with pytest.raises(EnvExecutionError, match="REPL worker"):
        env.reset()
    env.close()

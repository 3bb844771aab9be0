"""Real TRL (GRPO, 2 steps on CPU, a tiny local model) against our echo server, recorded with one
added line: every rollout is in the store once, with its step, group, index and the reward TRL
computed for it, ended at the end of its batch, in a run that ends ``finished``."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.training import require_trl

pytestmark = [pytest.mark.filterwarnings(f"ignore::{kind}:{module}") for kind in ("FutureWarning", "UserWarning", "DeprecationWarning")
              for module in ("trl", "transformers", "torch", "accelerate", "datasets")]  # third-party notices  # fmt: skip
URL: dict[str, str] = {}
WORDS = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g", "hh"]
PROMPT = [{"role": "user", "content": "Try to echo 'Hello World!' in the environment."}]


class EchoToolEnv:
    """The shape of TRL's OpenEnv guide: a plain client made in ``__init__``, tools as methods."""

    def __init__(self) -> None:
        from openenv.envs.echo import EchoEnv

        self.client = EchoEnv(base_url=URL["echo"])
        self.reward = 0.0

    def reset(self, **kwargs: Any) -> str | None:
        from openenv.envs.echo import EchoAction

        self.client.reset()
        # the tiny random model never writes a tool call: the rollout's env step is made here, so
        # each episode has a step and the reward differs by dataset row
        result = self.client.step(EchoAction(message=kwargs["word"]))
        self.reward = result.reward
        return None

    def echo(self, message: str) -> str:
        """Echo the message back from the environment.

        Args:
            message: The message to echo.

        Returns:
            The echoed message.
        """
        from openenv.envs.echo import EchoAction

        result = self.client.step(EchoAction(message=message))
        self.reward = result.reward
        return result.observation.echoed_message


SEEN: list[list[float]] = []  # the rewards TRL computed (weighted sum), batch by batch
SHORT: list[list[float]] = []


def reward_func(environments: list[EchoToolEnv], **kwargs: Any) -> list[float]:
    rewards = [float(env.reward) for env in environments]
    SEEN.append(rewards)
    return rewards


def brevity(completions: list[Any], **kwargs: Any) -> list[float]:
    scores = [-0.01 * len(str(c)) for c in completions]
    SHORT.append(scores)
    return scores


@pytest.fixture(scope="module")
def tiny_echo_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_trl()
    from tests.training.tiny_model import build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny") / "echo")  # random: it never writes a tool call


def test_grpo_on_echo_records_every_rollout_with_step_group_and_trl_reward(
    tiny_echo_model: Path, echo_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv.recording import EpisodeFilter, EpisodeStore
    from openenv.training import record_trl

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    URL["echo"] = echo_url
    SEEN.clear()
    SHORT.clear()
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=48, logging_steps=1, report_to="none", use_cpu=True, save_strategy="no",
                      learning_rate=1e-3, seed=0, reward_weights=[1.0, 0.5],
                      chat_template_kwargs={"enable_thinking": False})  # fmt: skip
    trainer = GRPOTrainer(model=str(tiny_echo_model), reward_funcs=[reward_func, brevity], args=args,
                          train_dataset=Dataset.from_dict({"prompt": [PROMPT] * 8, "word": WORDS}),
                          environment_factory=EchoToolEnv)  # fmt: skip
    db = tmp_path / "runs.db"
    record_trl(trainer, store=str(db), name="grpo-echo")  # the one added line
    trainer.train()

    assert len(SEEN) == 2 and all(len(batch) == 4 for batch in SEEN)
    with EpisodeStore(db) as store:
        (run,), _ = store.list_training_runs()
        assert (run.name, run.trainer, run.status, run.episodes, run.steps) == ("grpo-echo", "trl", "finished", 8, 2)
        assert run.env_name == "EchoToolEnv" and run.config["num_generations"] == 2
        episodes = list(store.iter_episodes(EpisodeFilter(training_run_id=run.id)))
        assert len(episodes) == 8 and len({e.id for e in episodes}) == 8
        by_step: dict[int, dict[tuple[str, int], Any]] = defaultdict(dict)
        for e in episodes:
            by_step[e.train_step][(e.group_id, e.group_index)] = e  # type: ignore[index]
        assert sorted(by_step) == [0, 1]
        for step, (env_rewards, short) in enumerate(zip(SEEN, SHORT, strict=True)):
            got = by_step[step]
            assert sorted(got) == [("0", 0), ("0", 1), ("1", 0), ("1", 1)]
            for i, (env_reward, brief) in enumerate(zip(env_rewards, short, strict=True)):
                e = got[(str(i // 2), i % 2)]
                assert e.trainer_reward == pytest.approx(env_reward + 0.5 * brief)
                assert e.reward_components == {"reward_func": pytest.approx(env_reward), "brevity": pytest.approx(brief)}
                assert e.total_reward == pytest.approx(env_reward) and e.step_count == 1
                assert e.advantage is not None and e.finish_reason in ("stop", "truncated")
                assert e.finished and e.end_reason == "rollout_end"
                (turn,) = [d for actor, d in store.load_turns(e.id).values() if actor == "model"]
                cap = turn["capture"]
                assert cap["prompt_ids"] and cap["sampled_ids"] and len(cap["loss_mask"]) == len(cap["sampled_ids"])
                assert turn["trainer"] == "trl" and turn["prompt"][-1]["content"] == PROMPT[0]["content"]
                assert -0.01 * len(str(turn["messages"])) == pytest.approx(brief)
            for g in ("0", "1"):  # GRPO: advantages of a group sum to ~0
                assert abs(got[(g, 0)].advantage + got[(g, 1)].advantage) < 1e-3
        durations = [e.ended_at - e.started_at for e in episodes]  # type: ignore[operator]
        assert max(durations) < 60
        steps = store.training_steps(run.id)
        assert [(s.step, s.episodes, s.groups) for s in steps] == [(0, 4, 2), (1, 4, 2)]

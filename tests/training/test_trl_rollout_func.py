"""TRL's ``rollout_func`` path recorded with ``record_trl``: the user's loop plays each rollout on
its own recording client and tags it with ``recorder.tag(client, i)``; every rollout is in the
store once with its step, group, index, TRL's reward and the loop's token ids and logprobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.training import require_trl

pytestmark = [pytest.mark.filterwarnings(f"ignore::{kind}:{module}") for kind in ("FutureWarning", "UserWarning", "DeprecationWarning")
              for module in ("trl", "transformers", "torch", "accelerate", "datasets")]  # third-party notices  # fmt: skip
PROMPT = [{"role": "user", "content": "Say a word to echo."}]
WORDS = ["a", "bb", "ccc", "dddd"]
STATE: dict[str, Any] = {}


def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
    from openenv.envs.echo import EchoAction

    tok, recorder, client = trainer.processing_class, STATE["recorder"], STATE["client"]
    out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_reward": []}
    for i, prompt in enumerate(prompts):
        recorder.tag(client, i, batch_size=len(prompts))
        client.reset()
        word = WORDS[(i + trainer.state.global_step) % len(WORDS)]
        result = client.step(EchoAction(message=word))
        text = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False, enable_thinking=False)
        completion = tok(word, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        out["prompt_ids"].append(tok(text, add_special_tokens=False)["input_ids"])
        out["completion_ids"].append(completion)
        out["logprobs"].append([-0.5] * len(completion))
        out["env_reward"].append(float(result.reward))
    STATE.setdefault("rewards", []).append(list(out["env_reward"]))
    return out


def env_reward(completions: list[Any], env_reward: list[float], **kwargs: Any) -> list[float]:
    return env_reward


def test_rollout_func_rollouts_are_recorded(tmp_path: Path, echo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    require_trl()
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv.envs.echo import EchoEnv
    from openenv.recording import EpisodeFilter, EpisodeStore
    from openenv.training import record_trl
    from tests.training.tiny_model import build_tiny

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model = build_tiny(tmp_path / "tiny")
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=8, logging_steps=1, report_to="none", use_cpu=True, save_strategy="no",
                      seed=0)  # fmt: skip
    trainer = GRPOTrainer(model=str(model), reward_funcs=env_reward, args=args, rollout_func=rollout_func,
                          train_dataset=Dataset.from_dict({"prompt": [PROMPT] * 8}))  # fmt: skip
    STATE.clear()
    STATE["recorder"] = recorder = record_trl(trainer, store=str(tmp_path / "runs.db"), name="rollout-func")
    STATE["client"] = recorder.run.record(EchoEnv(base_url=echo_url).sync())
    trainer.train()
    STATE["client"].close()

    with EpisodeStore(tmp_path / "runs.db") as store:
        (run,), _ = store.list_training_runs()
        assert (run.status, run.episodes, run.steps) == ("finished", 8, 2)
        for step, rewards in enumerate(STATE["rewards"]):
            eps = list(store.iter_episodes(EpisodeFilter(training_run_id=run.id, step_min=step, step_max=step)))
            by_key = {(e.group_id, e.group_index): e for e in eps}
            assert sorted(by_key) == [("0", 0), ("0", 1), ("1", 0), ("1", 1)]
            for i, reward in enumerate(rewards):
                e = by_key[(str(i // 2), i % 2)]
                assert e.trainer_reward == pytest.approx(reward) == pytest.approx(e.total_reward)
                assert e.finished and e.advantage is not None
                (turn,) = [d for a, d in store.load_turns(e.id).values() if a == "model"]
                assert turn["capture"]["logprobs"] == [-0.5] * len(turn["capture"]["sampled_ids"])

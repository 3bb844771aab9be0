"""GRPO with ``rollout_func`` over a ``VectorEnvClient`` (recorded): ``vector_rollout.py MODEL URL DB OUT``.

Each rollout call resets one session per completion TRL asks for (the prompts arrive repeated
``num_generations`` times), samples a completion per session with the policy (its token ids and
logprobs), steps each session with the completion's text (the echo env's reward: 0.1 per
character) and hands TRL ids, logprobs and the env reward. Writes the trainer's log history and the
sessions' episode ids per call to OUT.
"""

import json
import sys
from pathlib import Path

import torch
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from openenv.core import VectorEnvClient
from openenv.recording import EpisodeStore

MODEL, URL, DB, OUT = sys.argv[1:5]
store = EpisodeStore(DB)
envs = VectorEnvClient(URL, num_envs=4, store=store, label="rollout-func", info={"trainer": "trl"})
calls: list[list[str]] = []


def rollout_func(prompts, trainer):
    tok = trainer.processing_class
    batch = envs.reset(indices=range(len(prompts)))
    batch.raise_first()
    calls.append(envs.episode_ids[: len(prompts)])
    prompt_ids, completion_ids, logprobs, texts = [], [], [], []
    for prompt in prompts:
        ids = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False,
                                      enable_thinking=False)
        with torch.no_grad():
            out = trainer.model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=True,
                                         output_scores=True, return_dict_in_generate=True)
        new = out.sequences[0, len(ids):].tolist()
        steps = [torch.log_softmax(s[0].float(), -1)[t].item() for s, t in zip(out.scores, new, strict=True)]
        prompt_ids.append(ids)
        completion_ids.append(new)
        logprobs.append(steps)
        texts.append(tok.decode(new, skip_special_tokens=True) or "-")
    stepped = envs.step([{"message": t} for t in texts] + [None] * (envs.num_envs - len(prompts)))
    stepped.raise_first()
    return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs,
            "env_reward": stepped.rewards[: len(prompts)]}


def reward_from_env(completions, env_reward, **kwargs):
    return [float(r) for r in env_reward]


dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": "Say something to echo."}]] * 4})
trainer = GRPOTrainer(
    model=MODEL, train_dataset=dataset, reward_funcs=reward_from_env, rollout_func=rollout_func,
    args=GRPOConfig(output_dir=OUT, max_steps=2, per_device_train_batch_size=4, num_generations=4,
                    max_completion_length=12, logging_steps=1, save_strategy="no", report_to="none", use_cpu=True,
                    bf16=False, seed=7, dataloader_num_workers=0),
)
try:
    trainer.train()
finally:
    envs.close()
    store.close()
Path(OUT, "log_history.json").write_text(json.dumps(trainer.state.log_history))
Path(OUT, "episodes.json").write_text(json.dumps(calls))

# ruff: noqa: I001  (the guide's own import layout, kept verbatim)
"""``echo_quickstart.py`` (TRL's OpenEnv guide quick start, CPU-sized) with the one line that
records the run into the episode store ``argv[3]/runs.db`` (``openenv.training.record_trl``)."""

import sys

from datasets import Dataset
from echo_env import EchoEnv
from echo_env.models import EchoAction

from trl import GRPOConfig, GRPOTrainer
from openenv.training import record_trl

ENV_URL = sys.argv[2]

class EchoToolEnv:
    def __init__(self):
        self.env = EchoEnv(base_url=ENV_URL)
        self.reward = 0.0

    def reset(self, **kwargs) -> str | None:
        self.reward = 0.0
        return None

    def echo(self, message: str) -> str:
        """
        Echo the message back from the environment.

        Args:
            message: The message to echo

        Returns:
            The echoed message.
        """
        observation = self.env.step(EchoAction(message=message))
        self.reward = observation.observation.reward
        return observation.observation.echoed_message

def reward_func(environments, **kwargs):
    return [env.reward for env in environments]

dataset = Dataset.from_dict(
    {"prompt": [[{"role": "user", "content": "Try to echo 'Hello World!' in the environment."}]] * 4}
)

trainer = GRPOTrainer(
    model=sys.argv[1],
    train_dataset=dataset,
    reward_funcs=reward_func,
    args=GRPOConfig(
        chat_template_kwargs={"enable_thinking": False},
        log_completions=False,
        output_dir=sys.argv[3], max_steps=2, per_device_train_batch_size=4, num_generations=4,
        max_completion_length=40, max_tool_calling_iterations=1, logging_steps=1, save_strategy="no",
        report_to="none", use_cpu=True, bf16=False, seed=7, dataloader_num_workers=0,
    ),
    environment_factory=EchoToolEnv,
)
record_trl(trainer, store=f"{sys.argv[3]}/runs.db", name="echo-quickstart")  # the added line
trainer.train()

import json  # noqa: E402  (the test reads what TRL logged)
from pathlib import Path  # noqa: E402

Path(sys.argv[3], "log_history.json").write_text(json.dumps(trainer.state.log_history))

"""TRL's AsyncGRPO ``HarnessRolloutWorker`` (white-box: TRL samples each turn) against our echo
server, recorded with one added line, driven as ``AsyncGRPOTrainer`` drives it: ``start()``, read
scored samples off ``rollout_buffer``, ``update_model_version()`` after a "weight sync",
``stop()``.

Run: ``async_harness.py OUT``; writes ``OUT/samples.json`` (what TRL queued for training) and
records into ``OUT/runs.db``. No vLLM here: the engine is the loopback ``fake_engine`` answering
vLLM's ``/v1/completions`` with ids of the tiny tokenizer, and TRL's "is vLLM installed" probe is
answered yes (the worker only talks to the engine over HTTP). Nothing else of TRL is touched.
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from tests.capture.fake_engine import make_engine
from tests.server_utils import running_server
from tests.training.harness_echo import EchoSessionFactory, brevity
from tests.training.tiny_model import build_tiny, echo_tool_call

PROMPTS = [[{"role": "user", "content": f"Echo something, round {i}."}] for i in range(4)]
G = 2
GROUPS = 3  # groups to read at least: some sampled at policy version 0, the last after the "sync" (1)


def engine(tokenizer: Any) -> Any:
    """A tool call with a message of 1..4 x's, then, after the tool's answer, "done"."""
    sizes = itertools.cycle([1, 3, 2, 4])

    def complete(prompt: list[int], body: dict[str, Any]) -> list[int]:
        text = tokenizer.decode(prompt)
        if "<tool_response>" in text:
            return tokenizer.encode("done<|im_end|>", add_special_tokens=False)
        return tokenizer.encode(echo_tool_call("x" * next(sizes)), add_special_tokens=False)

    return make_engine(complete)


def main(out: Path) -> None:
    from accelerate import PartialState
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl.experimental.async_grpo import async_rollout_worker
    from trl.experimental.async_grpo.openenv_harness import HarnessRolloutWorker

    from openenv.core.harness import MCPHarnessAdapter
    from openenv.envs.echo.app import app as echo_app
    from openenv.training import record_trl

    async_rollout_worker.is_vllm_available = lambda *a, **k: True  # no vLLM wheel here: the engine is loopback
    PartialState()  # as the trainer's Accelerator does before it starts the worker
    tokenizer = AutoTokenizer.from_pretrained(build_tiny(out / "tiny"))
    dataset = Dataset.from_dict({"prompt": PROMPTS})
    with running_server(echo_app) as echo_url, running_server(engine(tokenizer)) as engine_url:
        worker = HarnessRolloutWorker(
            harness_session_factory=functools.partial(EchoSessionFactory, echo_url),
            harness_adapter=MCPHarnessAdapter(),  # white-box: TRL samples each turn
            model_name="tiny",
            dataset=dataset,
            reward_funcs=[brevity],
            processing_class=tokenizer,
            eos_token_ids=[tokenizer.eos_token_id],
            num_generations=G,
            max_inflight_tasks=2,
            vllm_server_url=engine_url,
            max_tokens=64,
            temperature=1.0,
            chat_template_kwargs={"enable_thinking": False},
        )
        record_trl(worker, store=str(out / "runs.db"), name="async-echo")  # the added line
        samples: list[Any] = []
        worker.start()
        try:
            while not (len({s.group_id for s in samples}) >= GROUPS and samples[-1].model_version == 1):
                worker.check_health(stale_after_s=120)
                samples.append(worker.rollout_buffer.get(timeout=120))
                if len(samples) == 1:
                    worker.update_model_version(1)  # what the trainer does after a weight sync
        finally:
            worker.stop()
    rows = [{"group_id": s.group_id, "model_version": s.model_version, "advantage": s.advantage,
             "metrics": s.metrics, "input_ids": s.input_ids.tolist(), "completion_mask": s.completion_mask.tolist(),
             "old_log_probs": s.old_log_probs.tolist()} for s in samples]  # fmt: skip
    (out / "samples.json").write_text(json.dumps(rows))


if __name__ == "__main__":
    main(Path(sys.argv[-1]))

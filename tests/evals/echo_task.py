"""The evaluation tutorial's task, as its readers write it: an Inspect AI task whose solver asks
the model, sends the answer to an MCP echo environment (``MCPToolClient.call_tool``) and whose
scorer compares what the environment echoed with the target. The env URL comes from the task
argument ``base_url`` (or ``$ECHO_ENV_URL``, for the ``file.py@task`` form)."""

from __future__ import annotations

import os

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver

from openenv.core import MCPToolClient

PHRASES = ["hello world", "inspect ai", "openenv eval", "reinforcement learning", "hugging face"]


@task
def openenv_echo_eval(base_url: str = ""):
    """Can the model repeat a phrase exactly, as echoed by the environment?"""
    return Task(
        dataset=[Sample(input=f"Repeat exactly: {p}", target=p, id=f"s{i}") for i, p in enumerate(PHRASES)],
        solver=echo_env_solver(base_url=base_url or os.environ["ECHO_ENV_URL"]),
        scorer=echo_scorer(),
    )


@solver
def echo_env_solver(base_url: str):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state = await generate(state)
        model_output = state.output.completion.strip()
        env = MCPToolClient(base_url=base_url)
        try:
            await env.reset()
            echoed = await env.call_tool("echo_message", message=model_output)
            state.metadata["echoed"] = str(echoed) if echoed is not None else ""
        finally:
            await env.close()
        return state

    return solve


@scorer(metrics=[accuracy()])
def echo_scorer():
    async def score(state: TaskState, target: Target) -> Score:
        echoed = state.metadata.get("echoed", "").strip()
        expected = target.text.strip()
        return Score(value=CORRECT if echoed == expected else INCORRECT,
                     explanation=f"Env echoed {echoed!r}, expected {expected!r}")

    return score

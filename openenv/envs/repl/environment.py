"""The REPL environment: an agent's Python cells run in a confined per-session worker.

Surface-compatible with the published OpenEnv REPL env (same action, observation and
state fields and reset kwargs) with these differences: cells run in a separate
process with wall-clock, memory, process and output limits; an episode ends when a
finish helper is *called* (``FINAL``, ``FINAL_VAR``, a literal ``print("FINAL(...)")``
written in the cell, ``answer["ready"] = True``, or ``is_final``), never because
stdout happens to contain ``FINAL(``; ``max_iterations`` counts executed cells
exactly; the final answer travels in the observation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Field

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from openenv.envs.repl.config import Limits
from openenv.envs.repl.isolation import current_isolation
from openenv.envs.repl.llm import LLMClient, LLMConfig
from openenv.envs.repl.loop import call_async, call_sync
from openenv.envs.repl.models import MULTILINE, CodeBlockResult, REPLAction, REPLObservation, REPLState
from openenv.envs.repl.rewards import RewardConfig
from openenv.envs.repl.sandbox import CellResult, Outcome, Sandbox

__all__ = ["REPLEnvironment"]

DEFAULT_MAX_ITERATIONS = 30
DEADLINE_MARGIN_S = 0.5


@dataclass
class _Episode:
    """The episode's bookkeeping as plain fields (``REPLState`` validates every assignment; a cell
    changes four of them), read into a :class:`REPLState` on demand."""

    episode_id: str
    context: str | None
    task_prompt: str | None
    max_iterations: int
    namespace_keys: list[str]
    step_count: int = 0
    iteration: int = 0
    final_answer: str | None = None
    total_execution_time: float = 0.0


class REPLEnvironment(Environment):
    """Runs Python cells in a persistent, isolated namespace; finish with ``FINAL(answer)``."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        rewards: RewardConfig | None = None,
        llm: LLMConfig | None = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        context_preview_chars: int = 500,
        context: str | None = None,
        task_prompt: str | None = None,
    ) -> None:
        self.limits = limits or Limits.from_env()
        self.rewards = rewards or RewardConfig()
        self.llm_config = llm if llm is not None else LLMConfig.from_env()
        self.default_max_iterations = max_iterations
        self.context_preview_chars = context_preview_chars
        self.default_context, self.default_task_prompt = context, task_prompt
        self._llm = LLMClient(self.llm_config) if self.llm_config else None
        self._sandbox: Sandbox | None = None
        self._state: _Episode | None = None
        self._expected: str | None = None
        self._done = False

    # -- the contract --------------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> REPLObservation:
        """Start an episode (blocking); see :meth:`reset_async` for the keyword arguments."""
        return call_sync(self._reset(seed=seed, episode_id=episode_id, **kwargs))

    def step(self, action: REPLAction, timeout_s: float | None = None, **kwargs: Any) -> REPLObservation:
        """Run one cell (blocking)."""
        return call_sync(self._step(action, timeout_s))

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        context: Annotated[str | None, Field(json_schema_extra=MULTILINE)] = None,
        task_prompt: Annotated[str | None, Field(json_schema_extra=MULTILINE)] = None,
        expected_answer: str | None = None,
        max_iterations: int | None = None,
        **kwargs: Any,
    ) -> REPLObservation:
        """Start an episode in a fresh worker.

        Args:
            seed: seeds ``random`` inside the worker.
            episode_id: identifier of the episode (generated when omitted).
            context: text loaded as the variable ``context``.
            task_prompt: the task, loaded as ``task_prompt``.
            expected_answer: reference answer for the outcome reward (never shown to the worker).
            max_iterations: cells allowed in this episode.
        """
        return await call_async(self._reset(seed=seed, episode_id=episode_id, context=context,
                                            task_prompt=task_prompt, expected_answer=expected_answer,
                                            max_iterations=max_iterations))

    async def step_async(self, action: REPLAction, timeout_s: float | None = None, **kwargs: Any) -> REPLObservation:
        """Run one cell on the caller's event loop (without blocking it; the worker's pipes are any loop's)."""
        return await self._step(action, timeout_s)

    @property
    def state(self) -> REPLState:
        """The episode's state (an empty state before the first reset)."""
        if self._state is None:
            return REPLState(max_iterations=self.default_max_iterations)
        return REPLState(**asdict(self._state))

    def close(self) -> None:
        """Kill the worker and everything it started."""
        call_sync(self._close())

    async def close_async(self) -> None:
        """Kill the worker and everything it started, without blocking the caller's loop."""
        await call_async(self._close())

    def get_metadata(self) -> EnvironmentMetadata:
        """Name and version, plus the isolation workers get and the warm-pool size."""
        return EnvironmentMetadata(
            name="repl",
            description="Python REPL for agents: persistent namespace in an isolated worker; finish with FINAL().",
            version="1.0",
            isolation=current_isolation(),
            warm_workers=self.limits.warm_workers,
        )

    @classmethod
    def health_details(cls) -> dict[str, Any]:
        """Added to ``GET /health``: the isolation in force (root-uids, user-namespaces or weak)."""
        return {"isolation": current_isolation()}

    # -- implementation (runs on the sandbox loop) -----------------------------------------
    async def _reset(self, *, seed: int | None = None, episode_id: str | None = None,
                     context: str | None = None, task_prompt: str | None = None,
                     expected_answer: str | None = None, max_iterations: int | None = None,
                     **_unknown: Any) -> REPLObservation:
        context = context if context is not None else self.default_context
        task_prompt = task_prompt if task_prompt is not None else self.default_task_prompt
        limit = int(max_iterations) if max_iterations is not None else self.default_max_iterations
        if limit < 1:
            raise ValueError("max_iterations must be at least 1")
        if self._sandbox is None:
            self._sandbox = Sandbox(self.limits, llm=self._llm)
        if self._llm is not None:
            self._llm.new_episode()
        variables = await self._sandbox.start(context=context, task_prompt=task_prompt, seed=seed)
        self._expected = None if expected_answer is None else str(expected_answer)
        self._done = False
        checked = REPLState(  # validated once here; a cell then updates plain fields
            episode_id=episode_id or self.new_episode_id(), step_count=0, context=context,
            task_prompt=task_prompt, iteration=0, max_iterations=limit, namespace_keys=variables,
        )
        self._state = _Episode(**checked.model_dump())
        lines = ["REPL environment initialized."]
        if context:
            lines.append(f"Context loaded ({len(context)} chars). Use the 'context' variable to access it.")
        if task_prompt:
            lines.append(f"Task: {task_prompt}")
        lines.append("Finish with FINAL(answer), FINAL_VAR('name') or answer = {'content': ..., 'ready': True}.")
        return self._observation(CodeBlockResult(stdout="\n".join(lines)), reward=0.0)

    async def _step(self, action: REPLAction, timeout_s: float | None) -> REPLObservation:
        if self._state is None or self._sandbox is None:  # a fresh env stepped as it is (0.10): default episode
            await self._reset()
        state, box = self._state, self._sandbox
        assert state is not None and box is not None
        state.step_count += 1
        if self._done:
            result = CodeBlockResult(success=False, exception="EpisodeDone: the episode is over; call reset()")
            return self._observation(result, reward=0.0, done=True)
        cell: CellResult | None = None
        if action.code or not action.is_final:
            cell = await box.run(action.code, timeout_s=self._cell_limit(timeout_s))
            state.iteration += 1
            state.total_execution_time += cell.execution_time
            state.namespace_keys = cell.variables
        answer = cell.final_answer if cell is not None else None
        if action.is_final:
            answer = action.final_answer if action.final_answer is not None else (answer or "")
        exhausted = answer is None and state.iteration >= state.max_iterations
        self._done = answer is not None or exhausted
        if answer is not None:
            state.final_answer = answer
        failed = cell is not None and not cell.success
        reward = self.rewards.step(failed=failed, answer=answer, expected=self._expected, exhausted=exhausted)
        obs = self._observation(_block(cell), reward=reward, done=self._done, cell=cell)
        obs.termination = "final" if answer is not None else ("max_iterations" if exhausted else None)
        return obs

    def _cell_limit(self, timeout_s: float | None) -> float:
        """The cell's wall-clock limit, leaving room to report before the server's deadline."""
        limit = self.limits.cell_timeout_s
        if timeout_s is not None:
            room = timeout_s - self.limits.interrupt_grace_s - DEADLINE_MARGIN_S
            limit = min(limit, max(room, timeout_s / 4))
        return limit

    def _observation(self, result: CodeBlockResult, *, reward: float, done: bool = False,
                     cell: CellResult | None = None) -> REPLObservation:
        state = self._state
        assert state is not None
        context = state.context
        return REPLObservation(
            result=result,
            context_preview=context[: self.context_preview_chars] if context else None,
            context_length=len(context) if context else 0,
            available_variables=list(state.namespace_keys),
            iteration=state.iteration,
            max_iterations=state.max_iterations,
            outcome=cell.outcome.value if cell is not None else Outcome.OK.value,
            namespace_lost=bool(cell and cell.namespace_lost),
            final_answer=state.final_answer,
            reward=reward,
            done=done,
            # Where the published env put these; in-process code reads them (the wire drops metadata).
            metadata={"task_prompt": state.task_prompt, "final_answer": state.final_answer,
                      "execution_time": result.execution_time},
        )

    async def _close(self) -> None:
        box, self._sandbox = self._sandbox, None
        if box is not None:
            await box.close()
        if self._llm is not None:
            await self._llm.aclose()


def _block(cell: CellResult | None) -> CodeBlockResult:
    if cell is None:
        return CodeBlockResult()
    return CodeBlockResult(
        stdout=cell.stdout, stderr=cell.stderr, locals_snapshot=cell.locals_snapshot,
        execution_time=max(0.0, cell.execution_time), success=cell.success, exception=cell.exception,
        stdout_chars=cell.stdout_chars, stderr_chars=cell.stderr_chars,
    )

"""``Rubric``: a composable reward, modelled on ``torch.nn.Module`` (RFC 004).

Serves the published ``openenv.core.rubrics.base``. Implement :meth:`Rubric.forward`; calling
the rubric runs its pre-hooks, ``forward``, records :attr:`last_score` and runs its post-hooks.
Rubrics assigned as attributes become children (``children()``, ``named_rubrics()``,
``get_rubric("a.b")``). An ``async def forward`` (or an async child of a container) makes the
call return a coroutine, awaited by ``Environment._apply_rubric_async``.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Rubric"]

PreHook = Callable[["Rubric", Any, Any], Any]
PostHook = Callable[["Rubric", Any, Any, float], Any]


class Rubric(ABC):
    """Computes a reward from ``(action, observation)``; see the module docstring."""

    last_score: float | None

    def __init__(self) -> None:
        object.__setattr__(self, "_rubric_children", {})
        object.__setattr__(self, "_forward_hooks", [])
        object.__setattr__(self, "_forward_pre_hooks", [])
        object.__setattr__(self, "last_score", None)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Rubric):
            self.__dict__.setdefault("_rubric_children", {})[name] = value
        object.__setattr__(self, name, value)

    @abstractmethod
    def forward(self, action: Any, observation: Any) -> float:
        """The reward of one step (typically in ``[0, 1]``)."""

    # -- calling ------------------------------------------------------------------------------

    def __call__(self, action: Any, observation: Any) -> Any:
        if inspect.iscoroutinefunction(self.forward):
            return self._finish_after(action, observation, self.forward(action, observation), ran=0)
        self._run_forward_pre_hooks(action, observation)
        result = self.forward(action, observation)
        if inspect.iscoroutine(result):  # a sync forward handed back an async child's call
            return self._finish_awaited(action, observation, result)
        return self._finish_forward(action, observation, result)

    async def _finish_after(self, action: Any, observation: Any, pending: Any, *, ran: int) -> float:
        """Run the pre-hooks not yet run, await ``pending`` (a coroutine or a value), finish."""
        await self._run_forward_pre_hooks_async(action, observation, start=ran)
        result = await pending if inspect.isawaitable(pending) else pending
        return await self._finish_forward_async(action, observation, result)

    async def _finish_awaited(self, action: Any, observation: Any, pending: Any) -> float:
        return await self._finish_forward_async(action, observation, await pending)

    # -- hooks ------------------------------------------------------------------------------

    def register_forward_hook(self, hook: PostHook) -> None:
        """Call ``hook(rubric, action, observation, score)`` after each evaluation."""
        self._forward_hooks.append(hook)

    def register_forward_pre_hook(self, hook: PreHook) -> None:
        """Call ``hook(rubric, action, observation)`` before each evaluation."""
        self._forward_pre_hooks.append(hook)

    def _run_forward_pre_hooks(self, action: Any, observation: Any, start: int = 0) -> None:
        for hook in self._forward_pre_hooks[start:]:
            hook(self, action, observation)

    async def _run_forward_pre_hooks_async(self, action: Any, observation: Any, start: int = 0) -> None:
        for hook in self._forward_pre_hooks[start:]:
            result = hook(self, action, observation)
            if inspect.isawaitable(result):
                await result

    def _run_leading_sync_pre_hooks(self, action: Any, observation: Any) -> int:
        """Run pre-hooks up to the first async one (containers, before any child); return how many ran."""
        ran = 0
        for hook in self._forward_pre_hooks:
            if inspect.iscoroutinefunction(hook):
                break
            hook(self, action, observation)
            ran += 1
        return ran

    def _finish_forward(self, action: Any, observation: Any, result: float) -> float:
        self.last_score = result
        for hook in self._forward_hooks:
            hook(self, action, observation, result)
        return result

    async def _finish_forward_async(self, action: Any, observation: Any, result: float) -> float:
        self.last_score = result
        for hook in self._forward_hooks:
            out = hook(self, action, observation, result)
            if inspect.isawaitable(out):
                await out
        return result

    # -- the tree ----------------------------------------------------------------------------

    def children(self) -> Iterator[Rubric]:
        """Immediate child rubrics."""
        yield from self._rubric_children.values()

    def named_children(self) -> Iterator[tuple[str, Rubric]]:
        yield from self._rubric_children.items()

    def rubrics(self) -> Iterator[Rubric]:
        """All descendants, depth first."""
        for child in self._rubric_children.values():
            yield child
            yield from child.rubrics()

    def named_rubrics(self, prefix: str = "") -> Iterator[tuple[str, Rubric]]:
        """All descendants with dotted names (``"code.syntax"``)."""
        for name, child in self._rubric_children.items():
            full = f"{prefix}.{name}" if prefix else name
            yield full, child
            yield from child.named_rubrics(full)

    def get_rubric(self, path: str) -> Rubric:
        """The descendant at a dotted ``path``; ``KeyError`` when there is none."""
        node: Rubric = self
        for part in path.split("."):
            if part not in node._rubric_children:
                raise KeyError(f"Rubric path not found: {path}")
            node = node._rubric_children[part]
        return node

    # -- state -----------------------------------------------------------------------------

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Clear per-episode state (``Environment._reset_rubric`` calls it)."""

    def state_dict(self) -> dict[str, Any]:
        """Configuration to checkpoint."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Restore :meth:`state_dict`'s output."""

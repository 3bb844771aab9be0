"""Containers composing rubrics (serves the published ``openenv.core.rubrics.containers``).

``Sequential`` (fail fast on a zero), ``Gate`` (threshold), ``WeightedSum`` (weights sum to 1),
and ``RubricList``/``RubricDict`` (registries whose parent defines the aggregation). A container
with an async child returns a coroutine; ``WeightedSum`` awaits its async children together.
As published, a ``Sequential`` whose children all score non-zero returns a coroutine when called
on a running event loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from openenv.core.rubrics.base import Rubric

__all__ = ["Gate", "RubricDict", "RubricList", "Sequential", "WeightedSum"]


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Sequential(Rubric):
    """Children in order; the first to score ``0`` ends the evaluation with ``0``, else the last score."""

    def __init__(self, *rubrics: Rubric) -> None:
        super().__init__()
        for i, rubric in enumerate(rubrics):
            setattr(self, f"rubric_{i}", rubric)
        self._rubric_list = list(rubrics)

    def forward(self, action: Any, observation: Any) -> float:
        result = 1.0
        for rubric in self._rubric_list:
            score = rubric(action, observation)
            if score == 0.0:
                return 0.0
            result = score
        return result

    def __call__(self, action: Any, observation: Any) -> Any:
        ran = self._run_leading_sync_pre_hooks(action, observation) if self._rubric_list else 0
        result = 1.0
        for i, rubric in enumerate(self._rubric_list):
            score = rubric(action, observation)
            if inspect.iscoroutine(score):
                rest = self._rubric_list[i + 1 :]
                return self._finish_after(action, observation, self._continue(score, rest, action, observation), ran=ran)
            if score == 0.0:
                self._run_forward_pre_hooks(action, observation, start=ran)
                return self._finish_forward(action, observation, 0.0)
            result = score
        if _in_event_loop():
            return self._finish_after(action, observation, result, ran=ran)
        self._run_forward_pre_hooks(action, observation, start=ran)
        return self._finish_forward(action, observation, result)

    @staticmethod
    async def _continue(pending: Any, rest: list[Rubric], action: Any, observation: Any) -> float:
        result = await pending
        if result == 0.0:
            return 0.0
        for rubric in rest:
            score = rubric(action, observation)
            if inspect.isawaitable(score):
                score = await score
            if score == 0.0:
                return 0.0
            result = score
        return result

    def __len__(self) -> int:
        return len(self._rubric_list)

    def __getitem__(self, index: int) -> Rubric:
        return self._rubric_list[index]


class Gate(Rubric):
    """The child's score when it reaches ``threshold``, else ``0``."""

    def __init__(self, rubric: Rubric, threshold: float = 1.0) -> None:
        super().__init__()
        self.rubric = rubric
        self.threshold = threshold

    def _gate(self, score: float) -> float:
        return 0.0 if score < self.threshold else score

    def forward(self, action: Any, observation: Any) -> float:
        return self._gate(self.rubric(action, observation))

    def __call__(self, action: Any, observation: Any) -> Any:
        ran = self._run_leading_sync_pre_hooks(action, observation)
        score = self.rubric(action, observation)
        if inspect.iscoroutine(score):
            return self._finish_after(action, observation, self._gated(score), ran=ran)
        self._run_forward_pre_hooks(action, observation, start=ran)
        return self._finish_forward(action, observation, self._gate(score))

    async def _gated(self, pending: Any) -> float:
        return self._gate(await pending)


class WeightedSum(Rubric):
    """``sum(w_i * score_i)``; the weights must sum to 1 and match the rubrics in number."""

    def __init__(self, rubrics: list[Rubric], weights: list[float]) -> None:
        super().__init__()
        if len(rubrics) != len(weights):
            raise ValueError(
                f"Number of rubrics ({len(rubrics)}) must match number of weights ({len(weights)})"
            )
        if abs(sum(weights) - 1.0) > 1e-6:
            raise ValueError(f"Weights must sum to 1.0, got {sum(weights)}")
        for i, rubric in enumerate(rubrics):
            setattr(self, f"rubric_{i}", rubric)
        self._rubric_list = list(rubrics)
        self._weights = list(weights)

    @property
    def weights(self) -> list[float]:
        return list(self._weights)

    def _total(self, scores: Iterable[float]) -> float:
        total = 0.0
        for score, weight in zip(scores, self._weights, strict=False):
            total += score * weight
        return total

    def forward(self, action: Any, observation: Any) -> float:
        return self._total(rubric(action, observation) for rubric in self._rubric_list)

    def __call__(self, action: Any, observation: Any) -> Any:
        ran = self._run_leading_sync_pre_hooks(action, observation)
        results = [rubric(action, observation) for rubric in self._rubric_list]
        if any(inspect.iscoroutine(r) for r in results):
            return self._finish_after(action, observation, self._gather(results), ran=ran)
        self._run_forward_pre_hooks(action, observation, start=ran)
        return self._finish_forward(action, observation, self._total(results))

    async def _gather(self, results: list[Any]) -> float:
        pending = [i for i, r in enumerate(results) if inspect.iscoroutine(r)]
        done = await asyncio.gather(*(results[i] for i in pending))
        scores = list(results)
        for i, score in zip(pending, done, strict=True):
            scores[i] = score
        return self._total(scores)


class RubricList(Rubric):
    """A list of child rubrics (like ``nn.ModuleList``); the parent rubric aggregates."""

    def __init__(self, rubrics: Iterable[Rubric] | None = None) -> None:
        super().__init__()
        self._rubrics: list[Rubric] = []
        self.extend(rubrics or [])

    def forward(self, action: Any, observation: Any) -> float:
        raise NotImplementedError(
            "RubricList.forward() is not implemented. "
            "Use RubricList within a parent rubric that defines aggregation."
        )

    def append(self, rubric: Rubric) -> None:
        setattr(self, f"rubric_{len(self._rubrics)}", rubric)
        self._rubrics.append(rubric)

    def extend(self, rubrics: Iterable[Rubric]) -> None:
        for rubric in rubrics:
            self.append(rubric)

    def __len__(self) -> int:
        return len(self._rubrics)

    def __getitem__(self, index: int) -> Rubric:
        return self._rubrics[index]

    def __iter__(self) -> Iterator[Rubric]:
        return iter(self._rubrics)


class RubricDict(Rubric):
    """Named child rubrics (like ``nn.ModuleDict``); the parent rubric aggregates."""

    def __init__(self, rubrics: Mapping[str, Rubric] | None = None) -> None:
        super().__init__()
        self._rubric_dict: dict[str, Rubric] = {}
        self.update(rubrics or {})

    def forward(self, action: Any, observation: Any) -> float:
        raise NotImplementedError(
            "RubricDict.forward() is not implemented. "
            "Use RubricDict within a parent rubric that defines aggregation."
        )

    def __setitem__(self, key: str, rubric: Rubric) -> None:
        setattr(self, key, rubric)
        self._rubric_dict[key] = rubric

    def __getitem__(self, key: str) -> Rubric:
        return self._rubric_dict[key]

    def __contains__(self, key: object) -> bool:
        return key in self._rubric_dict

    def __len__(self) -> int:
        return len(self._rubric_dict)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rubric_dict)

    def keys(self) -> Iterator[str]:
        return iter(self._rubric_dict.keys())

    def values(self) -> Iterator[Rubric]:
        return iter(self._rubric_dict.values())

    def items(self) -> Iterator[tuple[str, Rubric]]:
        return iter(self._rubric_dict.items())

    def update(self, rubrics: Mapping[str, Rubric]) -> None:
        for name, rubric in rubrics.items():
            self[name] = rubric

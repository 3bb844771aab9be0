"""``EvalHarness``: the interface every evaluation harness implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .types import EvalConfig, EvalResult

__all__ = ["EvalHarness"]


class EvalHarness(ABC):
    """An evaluation harness: ``run`` computes scores; ``run_from_config`` wraps them in an
    ``EvalResult`` together with the ``EvalConfig`` they came from."""

    @abstractmethod
    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        """Evaluate ``dataset`` with ``eval_parameters``; returns ``{metric name: score}``."""
        raise NotImplementedError

    def run_from_config(self, config: EvalConfig) -> EvalResult:
        """``run`` with the config's fields, as an ``EvalResult`` carrying the config."""
        scores = self.run(
            harness_version=config.harness_version,
            library_versions=config.library_versions,
            dataset=config.dataset,
            eval_parameters=config.eval_parameters,
        )
        return EvalResult(config=config, scores=scores)

    @property
    def name(self) -> str:
        """The harness's name: its class name."""
        return type(self).__name__

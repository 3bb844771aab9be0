"""Rubrics: composable rewards (RFC 004), as the published ``openenv.core.rubrics``.

``LLMJudge`` (and with it ``openenv.core.llm_client``/httpx) loads on first use.
"""

from __future__ import annotations

from typing import Any

from openenv.core.rubrics.base import Rubric
from openenv.core.rubrics.containers import Gate, RubricDict, RubricList, Sequential, WeightedSum
from openenv.core.rubrics.trajectory import ExponentialDiscountingTrajectoryRubric, TrajectoryRubric

__all__ = [
    "ExponentialDiscountingTrajectoryRubric",
    "Gate",
    "LLMJudge",
    "Rubric",
    "RubricDict",
    "RubricList",
    "Sequential",
    "TrajectoryRubric",
    "WeightedSum",
]


def __getattr__(name: str) -> Any:
    if name == "LLMJudge":
        from openenv.core.rubrics.llm_judge import LLMJudge

        globals()["LLMJudge"] = LLMJudge
        return LLMJudge
    raise AttributeError(f"module 'openenv.core.rubrics' has no attribute {name!r}")

"""Transforms to compose (serves the published ``openenv.core.env_server.base_transforms``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openenv.core.env_server.interfaces import Transform

__all__ = ["CompositeTransform", "NullTransform"]


class CompositeTransform(Transform):
    """Applies ``transforms`` in order, each to the previous one's output."""

    def __init__(self, transforms: Iterable[Transform]) -> None:
        self.transforms = list(transforms)

    def __call__(self, observation: Any) -> Any:
        for transform in self.transforms:
            observation = transform(observation)
        return observation


class NullTransform(Transform):
    """Returns the observation unchanged."""

    def __call__(self, observation: Any) -> Any:
        return observation

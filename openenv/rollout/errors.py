"""Rollout errors (part of the one tree in ``openenv.core.errors``)."""

from __future__ import annotations

from openenv.core.errors import OpenEnvError

__all__ = ["InvalidReplyError", "ModelError", "ModelTimeoutError", "RolloutError"]


class RolloutError(OpenEnvError):
    """Base of rollout errors (bad settings, an environment that cannot be reached)."""

    code = "ROLLOUT_ERROR"


class ModelError(RolloutError):
    """The model server failed (after bounded retries for transient errors): ``status`` when it
    answered with an HTTP error."""

    code = "MODEL_ERROR"


class ModelTimeoutError(ModelError, TimeoutError):
    """The model server did not answer in time (after bounded retries)."""

    code = "MODEL_TIMEOUT"


class InvalidReplyError(RolloutError):
    """A model reply that is not a valid action (``completion`` holds the raw text)."""

    code = "INVALID_REPLY"

"""The published ``openenv.core.env_server.exceptions`` names, mapped onto our one error tree."""

from __future__ import annotations

from openenv.core.errors import (
    CapacityError,
    ConcurrencyConfigurationError,
    FactoryError,
    OpenEnvError,
    SessionNotFoundError,
)

__all__ = [
    "ConcurrencyConfigurationError",
    "EnvironmentFactoryError",
    "OpenEnvError",
    "SessionCapacityError",
    "SessionCreationError",
    "SessionNotFoundError",
]

SessionCapacityError = CapacityError
EnvironmentFactoryError = FactoryError
SessionCreationError = FactoryError

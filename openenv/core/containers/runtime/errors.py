"""Provider errors, under the project's one tree.

    OpenEnvError
     └── ProviderError                     PROVIDER_ERROR
          ├── EngineUnavailableError       ENGINE_UNAVAILABLE (Docker engine not reachable)
          ├── ImageNotFoundError           IMAGE_NOT_FOUND
          ├── PortInUseError               PORT_IN_USE (port)
          ├── StartupError                 STARTUP_FAILED (log_tail, exit_code)
          │    ├── StartupTimeoutError     STARTUP_TIMEOUT (also a TimeoutError)
          │    └── PlacementError          PLACEMENT_FAILED (no node can take the env: resources)
          └── RuntimeNotFoundError         RUNTIME_NOT_FOUND (runtime_id)

Docker, Ray, subprocess and HTTP errors are translated into these at the provider boundary.
"""

from __future__ import annotations

from openenv.core.errors import OpenEnvError

__all__ = [
    "EngineUnavailableError",
    "ImageNotFoundError",
    "PlacementError",
    "PortInUseError",
    "ProviderError",
    "RuntimeNotFoundError",
    "StartupError",
    "StartupTimeoutError",
]


class ProviderError(OpenEnvError):
    """A runtime provider could not start, reach or stop an environment."""

    code = "PROVIDER_ERROR"


class EngineUnavailableError(ProviderError):
    code = "ENGINE_UNAVAILABLE"


class ImageNotFoundError(ProviderError):
    code = "IMAGE_NOT_FOUND"


class PortInUseError(ProviderError):
    code = "PORT_IN_USE"


class StartupError(ProviderError):
    """The environment exited or never became healthy; ``log_tail`` holds its last output."""

    code = "STARTUP_FAILED"

    def __str__(self) -> str:
        tail = self.details.get("log_tail") or ""
        return f"{self.message}\n--- last log lines ---\n{tail}" if tail else self.message


class StartupTimeoutError(StartupError, TimeoutError):
    """The environment was still not healthy when the readiness deadline passed."""

    code = "STARTUP_TIMEOUT"


class PlacementError(StartupError):
    """A cluster could not place the environment: no node has (or frees in time) what it asks for."""

    code = "PLACEMENT_FAILED"


class RuntimeNotFoundError(ProviderError):
    code = "RUNTIME_NOT_FOUND"

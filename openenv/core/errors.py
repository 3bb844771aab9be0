"""One exception tree for servers, clients and providers.

    OpenEnvError (RuntimeError)            code, message, details
     ├── ProtocolError                     INVALID_JSON, UNKNOWN_TYPE, MESSAGE_TOO_LARGE, UNSUPPORTED_FRAME
     ├── ActionValidationError             VALIDATION_ERROR (errors: pydantic error list)
     ├── EnvExecutionError                 EXECUTION_ERROR (the environment raised)
     ├── StepTimeoutError                  TIMEOUT (a step overran its deadline)
     ├── EnvBusyError                      ENV_BUSY (an overrun step is still running)
     ├── StepInterruptedError              STEP_INTERRUPTED (a reset on the session ended the running step)
     ├── LifecycleError                    STEP_BEFORE_RESET
     │    └── EpisodeLostError              EPISODE_LOST (the session was replaced after a drop: reset)
     ├── CapacityError                     CAPACITY_REACHED (active_sessions, max_sessions)
     ├── FactoryError                      FACTORY_ERROR (the environment could not be built)
     ├── SessionNotFoundError              SESSION_ERROR (unknown, closed or reaped session)
     ├── ConcurrencyConfigurationError     CONCURRENCY_CONFIG (max_concurrent_envs > 1 on an env
     │                                     not marked SUPPORTS_CONCURRENT_SESSIONS; raised at start)
     ├── LLMClientError                    LLM_ERROR (an LLM endpoint unreachable or answering an error)
     ├── ToolCallError                     TOOL_ERROR (an MCP tool call failed: error_type, tool_name)
     ├── TargetError (+ ValueError)        UNKNOWN_TARGET (nothing to serve or connect to by that name)
     │    └── HubUnavailableError           HUB_UNAVAILABLE (an owner/repo name, and the hub cannot be used)
     ├── ClientStateError                  CLIENT_STATE (client used before connect / after close)
     └── ConnectionLostError               CONNECTION_LOST (socket closed or unreachable)
          ├── ReconnectFailedError         RECONNECT_FAILED (the server stayed gone through the backoff)
          └── AuthenticationError          UNAUTHORIZED (+ PermissionError: the server wants a token; never retried)

Every error subclasses ``RuntimeError`` so code written for the published client, which
raises ``RuntimeError("Server error: ...")``, still catches ours. ``str(err)`` keeps that
published wording for errors that came from a server.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ActionValidationError",
    "AuthenticationError",
    "CapacityError",
    "ClientStateError",
    "ConcurrencyConfigurationError",
    "ConnectionLostError",
    "EnvBusyError",
    "EnvExecutionError",
    "EpisodeLostError",
    "FactoryError",
    "HubUnavailableError",
    "LLMClientError",
    "LifecycleError",
    "OpenEnvError",
    "ProtocolError",
    "ReconnectFailedError",
    "SessionNotFoundError",
    "StepInterruptedError",
    "StepTimeoutError",
    "TargetError",
    "ToolCallError",
    "error_from_wire",
]


class OpenEnvError(RuntimeError):
    """Base of every OpenEnv error; ``code`` is the wire error code."""

    code: str = "ERROR"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        self.message = message
        if code is not None:
            self.code = code
        self.details = details
        super().__init__(message)

    def to_wire(self) -> dict[str, Any]:
        """The ``data`` object of a WebSocket ``error`` reply (also the HTTP error body)."""
        return {"message": self.message, "code": self.code, **self.details}

    def __getattr__(self, name: str) -> Any:
        details = self.__dict__.get("details") or {}
        if name in details:
            return details[name]
        raise AttributeError(name)


class ProtocolError(OpenEnvError):
    code = "INVALID_JSON"


class ActionValidationError(OpenEnvError):
    code = "VALIDATION_ERROR"

    @property
    def errors(self) -> list[dict[str, Any]]:
        return list(self.details.get("errors", []))


class EnvExecutionError(OpenEnvError):
    code = "EXECUTION_ERROR"


class StepTimeoutError(OpenEnvError, TimeoutError):
    code = "TIMEOUT"


class EnvBusyError(OpenEnvError):
    code = "ENV_BUSY"


class StepInterruptedError(OpenEnvError):
    """A reset arrived on the session while this step ran: the step was ended, its result discarded."""

    code = "STEP_INTERRUPTED"


class LifecycleError(OpenEnvError):
    code = "STEP_BEFORE_RESET"


class EpisodeLostError(LifecycleError):
    """A step on a session that replaced one lost to a drop, restart or timeout: call ``reset``."""

    code = "EPISODE_LOST"


class CapacityError(OpenEnvError):
    code = "CAPACITY_REACHED"


class FactoryError(OpenEnvError):
    code = "FACTORY_ERROR"


class SessionNotFoundError(OpenEnvError):
    code = "SESSION_ERROR"


class ConcurrencyConfigurationError(OpenEnvError):
    """The published 0.10 start-up guard: several sessions asked of an env not marked concurrent-safe."""

    code = "CONCURRENCY_CONFIG"

    def __init__(self, environment_name: str, max_concurrent_envs: int, message: str | None = None) -> None:
        if message is None:
            message = (
                f"Environment '{environment_name}' is not marked as SUPPORTS_CONCURRENT_SESSIONS. "
                f"Cannot run with max_concurrent_envs={max_concurrent_envs}. "
                "Either set max_concurrent_envs=1 or ensure the environment "
                "properly isolates session state and set SUPPORTS_CONCURRENT_SESSIONS=True."
            )
        super().__init__(message, environment_name=environment_name, max_concurrent_envs=max_concurrent_envs)


class LLMClientError(OpenEnvError):
    code = "LLM_ERROR"


class ToolCallError(OpenEnvError):
    """An MCP tool call failed; ``error_type`` is tool_not_found, invalid_args, execution_error or timeout."""

    code = "TOOL_ERROR"


class TargetError(OpenEnvError, ValueError):
    """A target (env name, directory, ``module:app``, image, URL) that names nothing usable."""

    code = "UNKNOWN_TARGET"


class HubUnavailableError(TargetError):
    code = "HUB_UNAVAILABLE"


class ClientStateError(OpenEnvError):
    code = "CLIENT_STATE"


class ConnectionLostError(OpenEnvError, ConnectionError):
    code = "CONNECTION_LOST"


class AuthenticationError(ConnectionLostError, PermissionError):
    """The server refused this client's credentials: it needs a bearer token (never retried)."""

    code = "UNAUTHORIZED"


class ReconnectFailedError(ConnectionLostError):
    """The server stayed unreachable through every reconnect attempt (``attempts``, ``waited_s``)."""

    code = "RECONNECT_FAILED"


_BY_CODE: dict[str, type[OpenEnvError]] = {
    "INVALID_JSON": ProtocolError,
    "UNKNOWN_TYPE": ProtocolError,
    "MESSAGE_TOO_LARGE": ProtocolError,
    "UNSUPPORTED_FRAME": ProtocolError,
    "VALIDATION_ERROR": ActionValidationError,
    "EXECUTION_ERROR": EnvExecutionError,
    "TIMEOUT": StepTimeoutError,
    "ENV_BUSY": EnvBusyError,
    "STEP_INTERRUPTED": StepInterruptedError,
    "STEP_BEFORE_RESET": LifecycleError,
    "CAPACITY_REACHED": CapacityError,
    "FACTORY_ERROR": FactoryError,
    "SESSION_ERROR": SessionNotFoundError,
}


def error_from_wire(data: dict[str, Any]) -> OpenEnvError:
    """Build the typed error for a server's ``error`` reply."""
    data = dict(data) if isinstance(data, dict) else {"message": str(data)}
    message = str(data.pop("message", "unknown server error"))
    code = str(data.pop("code", "ERROR"))
    cls = _BY_CODE.get(code, OpenEnvError)
    err = cls(message, code=code, **data)
    err.args = (f"Server error: {message} (code: {code})",)
    return err

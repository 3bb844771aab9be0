"""The provider contract: start an environment server somewhere, wait until it answers, stop it.

provider = LocalProcessProvider()
base_url = provider.start_container("echo")
provider.wait_for_ready(base_url)
...
provider.stop_container()
"""

from __future__ import annotations

import logging
import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

import httpx

from .errors import ProviderError, StartupError, StartupTimeoutError

__all__ = ["ContainerProvider", "RuntimeInfo", "RuntimeStatus", "default_project"]

log = logging.getLogger(__name__)

LABEL_PREFIX = "io.openenv"
MANAGED_BY = "openenv-studio"


def default_project() -> str:
    """The project name that scopes what a provider lists and cleans up (``OPENENV_PROJECT``)."""
    return os.environ.get("OPENENV_PROJECT") or "default"


class RuntimeStatus(str, Enum):
    """Where a started environment is in its life."""

    STARTING = "starting"
    RUNNING = "running"
    EXITED = "exited"
    STOPPED = "stopped"


@dataclass(frozen=True)
class RuntimeInfo:
    """One environment runtime this project started, as found by ``list_runtimes``."""

    runtime_id: str
    provider: str
    project: str
    env_name: str | None
    base_url: str | None
    status: RuntimeStatus
    started_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ContainerProvider(ABC):
    """Runs one environment server and owns it until ``stop_container``.

    Subclasses implement start/stop/status/logs and the class-level ``list_runtimes``/``attach``;
    readiness polling against ``/health`` is shared here.
    """

    kind: ClassVar[str]

    def __init__(self, *, project: str | None = None) -> None:
        self.project = project or default_project()
        self.base_url: str | None = None
        self.runtime_id: str | None = None

    @abstractmethod
    def start_container(
        self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any
    ) -> str:
        """Start the environment and return its base URL (not yet necessarily ready)."""

    @abstractmethod
    def stop_container(self) -> None:
        """Stop and remove what this provider started; calling it again does nothing."""

    @abstractmethod
    def status(self) -> RuntimeStatus:
        """The current status of the runtime this provider started or attached to."""

    @abstractmethod
    def logs(self, tail: int = 100) -> str:
        """The last ``tail`` lines of the runtime's output."""

    @classmethod
    @abstractmethod
    def list_runtimes(cls, *, project: str | None = None, **kwargs: Any) -> list[RuntimeInfo]:
        """Runtimes of ``project`` (default: the current one) started by this provider kind."""

    @classmethod
    @abstractmethod
    def attach(cls, runtime_id: str, **kwargs: Any) -> ContainerProvider:
        """A provider bound to an existing runtime (found again after a restart)."""

    @classmethod
    def cleanup(cls, *, project: str | None = None, **kwargs: Any) -> int:
        """Stop every runtime of ``project`` this provider kind started; return how many."""
        found = cls.list_runtimes(project=project, **kwargs)
        for info in found:
            cls.attach(info.runtime_id, **kwargs).stop_container()
        return len(found)

    def headers(self, base_url: str | None = None) -> dict[str, str]:
        """HTTP headers a client must send to the env at ``base_url`` (e.g. a bearer token); none here."""
        return {}

    def _check_alive(self) -> None:  # noqa: B027 - optional hook
        """Raise ``StartupError`` when the runtime has already died (checked while polling)."""

    def _health_urls(self, base_url: str) -> list[str]:
        return [base_url.rstrip("/") + "/health"]

    def wait_for_ready(self, base_url: str | None = None, timeout_s: float = 30.0) -> None:
        """Poll ``/health`` until it answers 200; on failure stop the runtime and raise.

        Raises:
            StartupError: the runtime exited while starting (with its log tail).
            StartupTimeoutError: it was not healthy within ``timeout_s``.
        """
        base_url = base_url or self.base_url
        if base_url is None:
            raise StartupError("wait_for_ready called before start_container")
        pending = self._health_urls(base_url)
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        last = "no answer yet"
        with httpx.Client(timeout=2.0, trust_env=False) as http:
            while True:
                try:
                    self._check_alive()
                except StartupError:
                    self.stop_quietly()
                    raise
                for url in list(pending):
                    try:
                        if http.get(url).status_code == 200:
                            pending.remove(url)
                        else:
                            last = f"{url} answered non-200"
                    except httpx.HTTPError as exc:
                        last = f"{url}: {type(exc).__name__}"
                if not pending:
                    return
                if time.monotonic() >= deadline:
                    break
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 1.5, 0.05)
        tail = self.safe_logs()
        self.stop_quietly()
        raise StartupTimeoutError(
            f"environment at {base_url} not healthy after {timeout_s:g}s ({last})", log_tail=tail
        )

    def safe_logs(self, tail: int = 50) -> str:
        """The log tail, or a one-line reason why it is unavailable (never raises ProviderError)."""
        try:
            return self.logs(tail)
        except ProviderError as exc:
            return f"(logs unavailable: {exc.message})"

    def stop_quietly(self) -> None:
        """Stop, logging instead of raising when that fails (cleanup after a failed start)."""
        try:
            self.stop_container()
        except ProviderError as exc:
            log.warning("could not stop %s after a failed start: %s", self.runtime_id, exc.message)

    def __enter__(self) -> ContainerProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_container()

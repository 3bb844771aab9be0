"""Where a rollout's environment runs: a URL as it is, anything else started with the process
provider. One function (``start_env``) so the resolver can move to ``openenv.auto`` later."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import RolloutError

__all__ = ["RunningEnv", "start_env"]


@dataclass
class RunningEnv:
    """An env server to drive: its URL and, when we started it, the provider that stops it."""

    base_url: str
    provider: Any = None

    def close(self) -> None:
        if self.provider is not None:
            self.provider.stop_container()
            self.provider = None


def start_env(target: str, *, timeout_s: float = 60.0) -> RunningEnv:
    """``http(s)://…`` is used as it is; a bundled env name, ``module:app`` or an env directory is
    served by the local process provider on 127.0.0.1 (stopped by ``close``)."""
    if target.startswith(("http://", "https://")):
        return RunningEnv(target.rstrip("/"))
    from openenv.core.containers.runtime.errors import ProviderError
    from openenv.core.containers.runtime.local_process import LocalProcessProvider

    provider = LocalProcessProvider()
    try:
        url = provider.start_container(target)
        provider.wait_for_ready(url, timeout_s=timeout_s)
    except ProviderError as exc:
        provider.stop_quietly()
        raise RolloutError(f"could not start environment {target!r}: {exc}", code="ENV_START") from exc
    except BaseException:
        provider.stop_quietly()
        raise
    return RunningEnv(url, provider)

"""Where a rollout's environment runs: a URL as it is, anything else started by a provider (the
local process provider by default, or Ray). One function (``start_env``) so the resolver can move
to ``openenv.auto`` later."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import RolloutError

__all__ = ["RunningEnv", "start_env"]

_PROVIDERS = ("process", "ray")


@dataclass
class RunningEnv:
    """An env server to drive: its URL, the headers its server requires (a bearer token) and, when
    we started it, the provider that stops it."""

    base_url: str
    provider: Any = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    def close(self) -> None:
        if self.provider is not None:
            self.provider.stop_container()
            self.provider = None


def start_env(target: str, *, timeout_s: float = 60.0, provider: str = "process", token: str | None = None,
              ray_address: str | None = None) -> RunningEnv:
    """``http(s)://…`` is used as it is (``token`` is sent as a bearer token); a bundled env name,
    ``module:app`` or an env directory is started by ``provider`` — ``process`` (on 127.0.0.1) or
    ``ray`` (on the cluster at ``ray_address``, with the token it requires) — and stopped by ``close``."""
    if target.startswith(("http://", "https://")):
        return RunningEnv(target.rstrip("/"), headers={"Authorization": f"Bearer {token}"} if token else {})
    if provider not in _PROVIDERS:
        raise RolloutError(f"provider must be one of {', '.join(_PROVIDERS)}, not {provider!r}", code="ENV_START")
    from openenv.core.containers.runtime.errors import ProviderError

    if provider == "ray":
        from openenv.core.containers.runtime.ray import RayProvider

        runtime: Any = RayProvider(address=ray_address)
        options: dict[str, Any] = {"token": token} if token else {}
    else:
        from openenv.core.containers.runtime.local_process import LocalProcessProvider

        runtime, options = LocalProcessProvider(), {}
    try:
        url = runtime.start_container(target, **options)
        runtime.wait_for_ready(url, timeout_s=timeout_s)
    except ProviderError as exc:
        runtime.stop_quietly()
        raise RolloutError(f"could not start environment {target!r}: {exc}", code="ENV_START") from exc
    except BaseException:
        runtime.stop_quietly()
        raise
    return RunningEnv(url, runtime, runtime.headers(url))

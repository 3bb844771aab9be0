"""``AutoEnv``/``AutoAction``: a client (and action class) for an environment named any way the
resolver understands.

    env = AutoEnv.from_env("echo")                          # bundled: served in a child process
    env = AutoEnv.from_env("./my_env")                      # a directory with openenv.yaml
    env = AutoEnv.from_env("echo", base_url="http://127.0.0.1:8000")   # typed client, running server
    env = AutoEnv.from_env("http://127.0.0.1:8000")         # any running server (GenericEnvClient)
    env = AutoEnv.from_env("openenv-echo:latest")           # a local OpenEnv image, in Docker
    with env:
        env.reset()
    EchoAction = AutoAction.from_env("echo")

What ``from_env`` started is stopped when the client closes.
"""

from __future__ import annotations

import inspect
from typing import Any

from openenv.auto import info as _info
from openenv.auto.classes import client_class
from openenv.auto.resolve import EnvTarget, resolve
from openenv.core.env_client import EnvClient

__all__ = ["AutoAction", "AutoEnv"]


def _start(provider: Any, what: str, timeout_s: float, options: dict[str, Any]) -> str:
    try:
        base_url = provider.start_container(what, **options)
        provider.wait_for_ready(base_url, timeout_s)
    except BaseException:
        provider.stop_quietly()
        raise
    return base_url


class AutoEnv:
    """Factory: ``AutoEnv.from_env(target, ...)`` returns a client for ``target``."""

    def __init__(self) -> None:
        raise TypeError(
            "AutoEnv is a factory class and should not be instantiated directly. "
            "Use AutoEnv.from_hub() or AutoEnv.from_env() instead."
        )

    @classmethod
    def resolve(cls, target: str) -> EnvTarget:
        """What ``target`` names, without starting anything."""
        return resolve(target)

    @classmethod
    def from_env(
        cls,
        target: str,
        base_url: str | None = None,
        docker_image: str | None = None,
        container_provider: Any = None,
        wait_timeout: float = 60.0,
        env_vars: dict[str, str] | None = None,
        *,
        client_class: type[EnvClient] | None = None,
        provider: Any = None,
        **client_kwargs: Any,
    ) -> EnvClient:
        """A client for ``target`` (unconnected: it connects on first use, sync or async).

        Args:
            target: env name, directory, ``module:app``, installed env package, local image or URL.
            base_url: connect to this running server instead of starting anything.
            docker_image: run this image (the target then only picks the typed client).
            container_provider / provider: how to start it: an instance or a kind (``"process"``,
                ``"docker"``, ``"swarm"``); default: a child process for code, Docker for images.
            wait_timeout: readiness deadline for what is started.
            env_vars: environment variables for what is started.
            client_class: the client class (default: the env's typed client, else ``GenericEnvClient``).
            **client_kwargs: options for the client (``headers``, ``message_timeout_s``...).
        """
        from openenv.core.generic_client import GenericEnvClient

        provider = provider if provider is not None else container_provider
        found = resolve(target) if not (base_url and target.startswith(("http://", "https://"))) else None
        chosen = client_class if client_class is not None and not inspect.isabstract(client_class) else None
        if chosen is None and found is not None:
            chosen = _typed_client(found)
        chosen = chosen or GenericEnvClient
        if base_url is None and found is not None and found.kind == "url":
            base_url = found.url
        if base_url is not None:
            return chosen(base_url=base_url, **client_kwargs)
        assert found is not None
        from openenv.core.containers.runtime.launch import with_provider_headers
        from openenv.core.containers.runtime.providers import make_provider

        image = docker_image or found.image
        kind = "docker" if image else "process"
        runtime = make_provider(provider or kind) if provider is None or isinstance(provider, str) else provider
        what = image or found.serve_target
        options = {"env_vars": dict(env_vars)} if env_vars else {}
        url = _start(runtime, what, wait_timeout, options)
        try:
            return chosen(base_url=url, provider=runtime, **with_provider_headers(runtime, url, client_kwargs))
        except BaseException:
            runtime.stop_quietly()
            raise

    @classmethod
    def from_hub(cls, name: str, base_url: str | None = None, docker_image: str | None = None,
                 container_provider: Any = None, wait_timeout: float = 30.0, env_vars: dict[str, str] | None = None,
                 trust_remote_code: bool = False, skip_install: bool = False, **kwargs: Any) -> EnvClient:  # fmt: skip
        """0.10's alias of ``from_env`` (``trust_remote_code``/``skip_install`` accepted; we never
        install from the hub: an ``owner/repo`` without ``base_url`` raises ``HubUnavailableError``)."""
        if skip_install and base_url is not None:  # 0.10: a GenericEnvClient, nothing looked up
            from openenv.core.generic_client import GenericEnvClient

            kwargs.pop("client_class", None)
            return GenericEnvClient(base_url=base_url, **kwargs)
        return cls.from_env(name, base_url, docker_image, container_provider, wait_timeout, env_vars, **kwargs)

    @classmethod
    def get_env_class(cls, name: str) -> type[EnvClient]:
        """The env's client class, not instantiated (``GenericEnvClient`` when it has none)."""
        from openenv.core.generic_client import GenericEnvClient

        return _typed_client(resolve(name, docker=False)) or GenericEnvClient

    @classmethod
    def get_env_info(cls, name: str) -> dict[str, Any]:
        """0.10's dict: ``env_key``, ``name``, ``package``, ``version``, ``description``, ``env_class``,
        ``action_class``, ``observation_class``, ``module``, ``default_image``, ``spec_version``."""
        return _info.env_info(resolve(name, docker=False))

    @classmethod
    def list_environments(cls) -> None:
        """Print every env found here (0.10's listing)."""
        _info.print_environments()


def _typed_client(found: EnvTarget) -> type[EnvClient] | None:
    return client_class(found) if found.package is not None else None


from openenv.auto.auto_action import AutoAction  # noqa: E402  (0.10 exposes it here too)

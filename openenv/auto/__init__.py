"""Name an environment any way (bundled name, directory with ``openenv.yaml``, ``module:app``,
installed env package, local OpenEnv image, URL) and get what serves it or a client for it.

One resolver (``resolve``) serves ``openenv serve``, the studio catalogue and ``from_env``.
"""

from openenv.auto.auto_action import AutoAction
from openenv.auto.auto_env import AutoEnv
from openenv.auto.resolve import (
    BUNDLED_PREFIX,
    EnvTarget,
    TargetError,
    bundled_envs,
    env_names,
    installed_env_packages,
    load_app,
    read_manifest,
    resolve,
    resolve_target,
)
from openenv.core.errors import HubUnavailableError

__all__ = [
    "BUNDLED_PREFIX",
    "AutoAction",
    "AutoEnv",
    "EnvTarget",
    "HubUnavailableError",
    "TargetError",
    "bundled_envs",
    "env_names",
    "installed_env_packages",
    "load_app",
    "read_manifest",
    "resolve",
    "resolve_target",
]

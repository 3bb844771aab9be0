"""Run in the 0.10 peer: its AutoEnv/AutoAction helpers on an env directory, as JSON on stdout.

0.10 discovers only installed ``openenv-*`` distributions; the probe points its discovery at the
directory (its own ``_create_env_info_from_package`` builds the info) so the public helpers run."""

import json
import sys

from openenv.auto._discovery import _create_env_info_from_package

import openenv.auto.auto_action as auto_action
import openenv.auto.auto_env as auto_env
from openenv.auto import AutoAction, AutoEnv

parent, module = sys.argv[1], sys.argv[2]
sys.path.insert(0, parent)
info = _create_env_info_from_package(f"openenv-{module}", module, "1.2.3")


class _Found:
    def get_environment_by_name(self, name):
        return info if name.replace("-", "_").removesuffix("_env") == info.env_key else None

    def discover(self):
        return {info.env_key: info}


auto_env.get_discovery = auto_action.get_discovery = _Found
out = {"env_info": AutoEnv.get_env_info(module), "action_info": AutoAction.get_action_info(module)}
try:
    out["action_class"] = AutoAction.from_env(module).__name__
except ImportError as exc:
    out["action_class"] = f"ImportError: {exc}"
out["env_class"] = AutoEnv.get_env_class(module).__name__
print(json.dumps(out))

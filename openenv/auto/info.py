"""What ``AutoEnv.get_env_info`` / ``list_environments`` and ``AutoAction.get_action_info`` report:
0.10's dict keys and printed listing, computed from our resolver (bundled envs, installed
``openenv-*`` packages, directories)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from openenv.auto.resolve import EnvTarget, env_names, installed_env_packages, resolve

__all__ = ["action_info", "available", "env_info", "print_actions", "print_environments"]


def _pascal(base: str) -> str:
    return "".join(word.capitalize() for word in base.split("_"))


def _names(found: EnvTarget) -> tuple[str, str]:
    """``(env_key, name)`` as 0.10 spells them: ``echo`` and ``echo_env``."""
    raw = str(found.manifest.get("name") or found.name).replace("-", "_")
    name = raw if raw.endswith("_env") else f"{raw}_env"
    return name.replace("_env", ""), name


def _version(found: EnvTarget) -> str:
    if found.kind == "bundled":
        from openenv import __version__

        return str(__version__)
    if found.kind == "package" and found.package:
        for dist in (f"openenv-{found.package}", f"openenv-{found.package.replace('_', '-')}"):
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    return str(found.manifest.get("version") or "0.0.0")


def _package_name(found: EnvTarget) -> str:
    if found.kind == "bundled":
        return "openenv"
    for _key, (dist, module) in installed_env_packages().items():
        if module == found.package:
            return dist
    return f"openenv-{found.package or found.name}"


def env_info(found: EnvTarget) -> dict[str, Any]:
    """0.10's ``get_env_info`` dict for a resolved env."""
    key, name = _names(found)
    manifest = found.manifest
    custom = "action" in manifest and "observation" in manifest
    module = f"{found.package}.client" if found.package else f"{name}.client"
    if found.kind == "bundled":
        module = f"openenv.envs.{found.name}.client"
    return {
        "env_key": key,
        "name": name,
        "package": _package_name(found),
        "version": _version(found),
        "description": str(manifest.get("description") or f"{name} environment"),
        "env_class": f"{_pascal(key)}Env",
        "action_class": str(manifest["action"]) if custom else f"{_pascal(key)}Action",
        "observation_class": str(manifest["observation"]) if custom else f"{_pascal(key)}Observation",
        "module": module,
        "default_image": f"{name.replace('_', '-')}:latest",
        "spec_version": manifest.get("spec_version"),
    }


def action_info(found: EnvTarget) -> dict[str, Any]:
    """0.10's ``get_action_info`` dict."""
    info = env_info(found)
    return {"env_key": info["env_key"], "env_name": info["name"], "package": info["package"],
            "action_class": info["action_class"], "observation_class": info["observation_class"],
            "module": info["module"]}  # fmt: skip


def available() -> dict[str, EnvTarget]:
    """Every env found here without network, once each, by the name that reaches it: installed
    ``openenv-*`` packages and bundled envs (``openenv.envs.<name>`` when a package shadows one)."""
    out: dict[str, EnvTarget] = {}
    for name in env_names():
        try:
            out[name] = resolve(name, docker=False)
        except ValueError:  # an installed package we cannot serve is still not an error to list
            continue
    return out


def print_environments() -> None:
    """0.10's ``list_environments`` listing (printed, returns ``None``)."""
    envs = available()
    print("Available OpenEnv Environments:")
    print("-" * 70)
    if not envs:
        print("  No OpenEnv environments found.")
        print("  Install environments with: pip install openenv-<env-name>")
    for key in sorted(envs):
        info = env_info(envs[key])
        print(f"  {key:<15}: {info['description']} (v{info['version']})")
        print(f"                   Package: {info['package']}")
    print("-" * 70)
    print(f"Total: {len(envs)} environments")


def print_actions() -> None:
    """0.10's ``list_actions`` listing (printed, returns ``None``)."""
    envs = available()
    print("Available Action Classes:")
    print("-" * 70)
    if not envs:
        print("  No OpenEnv environments found.")
        print("  Install environments with: pip install openenv-<env-name>")
    for key in sorted(envs):
        info = env_info(envs[key])
        print(f"  {key:<15}: {info['action_class']}")
        print(f"                   Package: {info['package']}")
    print("-" * 70)
    print(f"Total: {len(envs)} action classes")

"""The launch form -> structured provider options (never a command line), with per-field errors."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PROVIDER_FIELDS", "LaunchForm", "read_launch_form"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MEMORY = re.compile(r"^\d+[bkmgBKMG]?$")
PROVIDER_FIELDS: dict[str, tuple[str, ...]] = {
    "process": ("port", "env_vars"),
    "docker": ("port", "env_vars", "memory", "cpus", "pids_limit", "isolated"),
    "swarm": ("env_vars", "memory", "cpus", "pids_limit", "replicas", "isolated"),
    "ray": ("env_vars", "memory", "cpus"),
}


@dataclass
class LaunchForm:
    """What the user typed (to show again) and, if valid, the provider options."""

    provider: str
    values: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors


def _env_vars(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not sep or not _ENV_NAME.match(name.strip()):
            raise ValueError(f"line {n}: write NAME=value")
        out[name.strip()] = value
    return out


def _int(text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("a whole number") from None
    if not low <= value <= high:
        raise ValueError(f"between {low} and {high}")
    return value


def read_launch_form(provider: str, form: Mapping[str, str], allowed: tuple[str, ...]) -> LaunchForm:
    """Validate the launch fields for ``provider``; unknown providers are an error on ``provider``."""
    result = LaunchForm(provider=provider, values={k: v for k, v in form.items() if isinstance(v, str)})
    if provider not in allowed:
        result.errors["provider"] = f"choose one of: {', '.join(allowed) or 'none available'}"
        return result
    opts: dict[str, Any] = {}
    for name in PROVIDER_FIELDS[provider]:
        text = (form.get(name) or "").strip()
        if not text:
            continue
        try:
            if name == "port":
                opts["port"] = _int(text, 1, 65535)
            elif name == "env_vars":
                opts["env_vars"] = _env_vars(form.get(name) or "")
            elif name == "memory":
                if not _MEMORY.match(text):
                    raise ValueError("like 512m or 2g")
                opts["memory"] = text.lower()
            elif name == "cpus":
                try:
                    cpus = float(text)
                except ValueError:
                    raise ValueError("a number, like 1.5") from None
                if not 0 < cpus <= 256:
                    raise ValueError("a positive number of CPUs")
                opts["cpus"] = cpus
            elif name == "pids_limit":
                opts["pids_limit"] = _int(text, 8, 1_000_000)
            elif name == "replicas":
                opts["replicas"] = _int(text, 1, 64)
            elif name == "isolated" and text == "on":
                if "port" in opts:
                    raise ValueError("an isolated container cannot publish a port; leave the port empty")
                opts["network"] = False
        except ValueError as exc:
            result.errors[name] = str(exc)
    result.options = opts
    return result

"""Kept for old imports: the resolver lives in ``openenv.auto`` (the library owns it)."""

from openenv.auto.resolve import BUNDLED_PREFIX, TargetError, bundled_envs, load_app, resolve_target

__all__ = ["BUNDLED_PREFIX", "TargetError", "bundled_envs", "load_app", "resolve_target"]

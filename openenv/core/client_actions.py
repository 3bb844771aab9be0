"""A typed client's ``_step_payload`` given the wrong kind of action raises a ``TypeError`` naming
the Action class it expects (instead of the ``AttributeError`` its field access would raise)."""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["expected_action_class", "guard_step_payload"]


def expected_action_class(cls: type) -> type | None:
    """The concrete Action class in ``EnvClient[ActT, ...]`` among ``cls``'s bases, or None."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            args = typing.get_args(base)
            origin = typing.get_origin(base)
            if args and isinstance(origin, type) and origin.__name__ == "EnvClient":
                act = args[0]
                return act if isinstance(act, type) and act not in (dict, object) else None
    return None


class _WrongActionType(TypeError):
    pass


def guard_step_payload(cls: type, method: Callable[[Any, Any], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Wrap ``method`` so a failure on an action that is not ``cls``'s Action type says so."""

    @functools.wraps(method)
    def _step_payload(self: Any, action: Any) -> dict[str, Any]:
        try:
            return method(self, action)
        except _WrongActionType:
            raise
        except (AttributeError, TypeError, KeyError) as exc:
            expected = expected_action_class(type(self))
            if expected is None or isinstance(action, expected):
                raise
            hint = f"; build one with {expected.__name__}(**action)" if isinstance(action, dict) else ""
            raise _WrongActionType(
                f"{type(self).__name__}.step() expects a {expected.__module__}.{expected.__name__}, "
                f"got {type(action).__name__}{hint}"
            ) from exc

    _step_payload.__openenv_guarded__ = True  # type: ignore[attr-defined]
    return _step_payload

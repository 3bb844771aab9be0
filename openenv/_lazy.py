"""Package names that load their module on first use, so importing a package costs nothing:

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {"graph": ("RolloutGraph",), ...})

Keys are module names, relative to the package unless they contain a dot.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, sources: dict[str, tuple[str, ...]], *,
                 missing: Callable[[str], Exception | None] | None = None) -> tuple[Any, Any, list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` (names starting with ``_`` stay out of
    ``__all__``); ``missing(name)`` may give the error for a name that is not there."""
    where = {name: module if "." in module else f"{package}.{module}"
             for module, names in sources.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            error = missing(name) if missing is not None else None
            raise error or AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__, sorted(n for n in where if not n.startswith("_"))

"""The historical ``openenv_core`` import path (published 0.3 and older catalogue envs), kept as an
alias: ``openenv_core.X`` is ``openenv.core.X`` — the same module objects, any depth, loaded on
first use. Importing it warns (``DeprecationWarning``), as the published alias does.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

_SOURCE, _TARGET = "openenv_core", "openenv.core"

warnings.warn("openenv_core is deprecated; import from openenv.core instead.", DeprecationWarning, stacklevel=2)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``openenv_core.<path>`` as the module ``openenv.core.<path>``."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_SOURCE + "."):
            return None
        real = _TARGET + fullname[len(_SOURCE):]
        try:
            if importlib.util.find_spec(real) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(_TARGET + spec.name[len(_SOURCE):])

    def exec_module(self, module: ModuleType) -> None:
        """The real module ran when it was imported."""


if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Alias())  # before the path finder, which would load second copies

_core = importlib.import_module(_TARGET)
__all__ = list(getattr(_core, "__all__", []))


def __getattr__(name: str) -> Any:
    return getattr(_core, name)


def __dir__() -> list[str]:
    return dir(_core)

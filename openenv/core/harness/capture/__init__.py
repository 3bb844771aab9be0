"""Token-level capture at 0.10's import path ``openenv.core.harness.capture``.

The implementation is ``openenv.capture`` (see docs/capture.md); these modules give 0.10's names:
``graph``, ``validate``, ``contract``, ``detection``, ``sessions``, ``server`` (``create_app``),
``runner`` (``CaptureServer``), ``upstream`` (``InferenceClient``) and ``validate_llm``
(``validate_llm``, ``require_llm``, ``LLMReport``: the live probe of an engine's capture level).
"""

from __future__ import annotations

import importlib
from typing import Any

_SOURCES: dict[str, tuple[str, ...]] = {
    "openenv.capture.contract": ("to_trace_entries", "to_training_trace", "to_turn_records"),
    "openenv.capture.detection": ("APIType", "detect"),
    "openenv.capture.engine": ("UpstreamError",),
    "openenv.capture.graph": ("RolloutGraph", "TurnNode"),
    "openenv.capture.inference": ("InferenceClient",),
    "openenv.capture.probe": ("LLMReport", "require_llm", "validate_llm"),
    "openenv.capture.server": ("CaptureServer",),
    "openenv.capture.skew": ("measure_retokenization_skew",),
}
_WHERE = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Names load on first use, so reading graphs and contracts never loads the proxy's server."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))

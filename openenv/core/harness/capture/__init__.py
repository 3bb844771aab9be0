"""Token-level capture at 0.10's import path ``openenv.core.harness.capture``.

The implementation is ``openenv.capture`` (see docs/capture.md); these modules give 0.10's names:
``graph``, ``validate``, ``contract``, ``detection``, ``sessions``, ``server`` (``create_app``),
``runner`` (``CaptureServer``), ``upstream`` (``InferenceClient``, ``training_sampling``...), ``compat``
(``diagnose``, ``ParamFix``: the edit an engine's 400 asks for) and ``validate_llm``
(``validate_llm``, ``require_llm``, ``LLMReport``: the live probe of an engine's capture level).
"""

from __future__ import annotations

from openenv._lazy import lazy_exports

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

__getattr__, __dir__, __all__ = lazy_exports(__name__, _SOURCES)

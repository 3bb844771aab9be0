"""Token-level capture at 0.10's import path ``openenv.core.harness.capture``.

The implementation is ``openenv.capture`` (see docs/capture.md); these modules give 0.10's names:
``graph``, ``validate``, ``contract``, ``detection``, ``sessions``, ``server`` (``create_app``),
``runner`` (``CaptureServer``) and ``upstream`` (``InferenceClient``). Not provided:
``validate_llm``/``require_llm``/``LLMReport`` (0.10's live probe of an engine's capture level).
"""

from __future__ import annotations

from openenv.capture.contract import to_trace_entries, to_training_trace, to_turn_records
from openenv.capture.detection import APIType, detect
from openenv.capture.engine import UpstreamError
from openenv.capture.graph import RolloutGraph, TurnNode
from openenv.capture.inference import InferenceClient
from openenv.capture.server import CaptureServer
from openenv.capture.skew import measure_retokenization_skew

__all__ = [
    "APIType",
    "CaptureServer",
    "InferenceClient",
    "RolloutGraph",
    "TurnNode",
    "UpstreamError",
    "detect",
    "measure_retokenization_skew",
    "to_trace_entries",
    "to_training_trace",
    "to_turn_records",
]

_MISSING = ("validate_llm", "require_llm", "LLMReport")


def __getattr__(name: str) -> object:
    if name in _MISSING:
        raise ImportError(f"{name} (0.10's live probe of an engine's capture level) is not provided by this package: "
                          "pass capture_level explicitly (tokens for vLLM/SGLang, text for hosted APIs)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

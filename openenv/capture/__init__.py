"""Token-level capture of model calls, for training on what the model really saw and sampled.

A proxy (``create_capture_app``, ``CaptureServer``, ``openenv capture``) between an agent harness
and an OpenAI-compatible engine (vLLM, SGLang) asks the engine for its own prompt ids, sampled ids
and logprobs, links calls into a ``RolloutGraph`` by exact token prefix, records each call in the
episode store as it completes, and hands a trainer one validated document per rollout
(``rollout_document``; OpenEnv 0.10's format). Nothing is tokenized locally. No web code here.
"""

from __future__ import annotations

from openenv._lazy import lazy_exports

_SOURCES: dict[str, tuple[str, ...]] = {
    "app": ("create_capture_app",),
    "checks": ("Finding", "Report", "check_rollout", "check_sequence", "check_turn", "check_upstream_response"),
    "document": ("rollout_document", "summarise"),
    "engine": ("CAPTURE_LEVELS", "EngineClient", "UpstreamError"),
    "graph": ("RolloutGraph", "TrainingSequence", "TurnNode"),
    "recording": ("CaptureRecorder", "graph_from_turns"),
    "server": ("CaptureServer",),
    "sessions": ("CaptureSession", "SessionRegistry"),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _SOURCES)

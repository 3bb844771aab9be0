"""Token-level capture of model calls, for training on what the model really saw and sampled.

A proxy (``create_capture_app``, ``CaptureServer``, ``openenv capture``) between an agent harness
and an OpenAI-compatible engine (vLLM, SGLang) asks the engine for its own prompt ids, sampled ids
and logprobs, links calls into a ``RolloutGraph`` by exact token prefix, records each call in the
episode store as it completes, and hands a trainer one validated document per rollout
(``rollout_document``; OpenEnv 0.10's format). Nothing is tokenized locally. No web code here.
"""

from __future__ import annotations

from .app import create_capture_app
from .checks import Finding, Report, check_rollout, check_sequence, check_turn, check_upstream_response
from .document import rollout_document, summarise
from .engine import CAPTURE_LEVELS, EngineClient, UpstreamError
from .graph import RolloutGraph, TrainingSequence, TurnNode
from .recording import CaptureRecorder, graph_from_turns
from .server import CaptureServer
from .sessions import CaptureSession, SessionRegistry

__all__ = [
    "CAPTURE_LEVELS",
    "CaptureRecorder",
    "CaptureServer",
    "CaptureSession",
    "EngineClient",
    "Finding",
    "Report",
    "RolloutGraph",
    "SessionRegistry",
    "TrainingSequence",
    "TurnNode",
    "UpstreamError",
    "check_rollout",
    "check_sequence",
    "check_turn",
    "check_upstream_response",
    "create_capture_app",
    "graph_from_turns",
    "rollout_document",
    "summarise",
]

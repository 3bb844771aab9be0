"""0.10's ``openenv.core.harness.capture.graph``: model calls linked by exact token prefix."""

from openenv.capture.graph import RolloutGraph, TrainingSequence, TurnNode, common_prefix_len

__all__ = ["RolloutGraph", "TrainingSequence", "TurnNode", "common_prefix_len"]

"""0.10's ``openenv.core.harness.capture.contract``: per-call training records from a rollout."""

from openenv.capture.contract import to_trace_entries, to_training_trace, to_turn_records
from openenv.capture.skew import measure_retokenization_skew

__all__ = ["measure_retokenization_skew", "to_trace_entries", "to_training_trace", "to_turn_records"]

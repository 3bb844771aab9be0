"""0.10's ``openenv.core.harness.capture.validate``: graded checks on captured calls and rollouts."""

from openenv.capture.checks import (
    FATAL,
    INFO,
    WARN,
    Finding,
    Report,
    check_rollout,
    check_sequence,
    check_turn,
    check_turn_eval,
    check_upstream_response,
    validate_training_turn,
)

__all__ = ["FATAL", "INFO", "WARN", "Finding", "Report", "check_rollout", "check_sequence", "check_turn",
           "check_turn_eval", "check_upstream_response", "validate_training_turn"]

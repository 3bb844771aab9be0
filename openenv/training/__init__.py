"""Training runs in the episode store: every rollout with its training step, prompt group, the
trainer's reward and advantage (imports the client and the recorder only; no server or web code).

    from openenv.training import record_trl            # TRL GRPOTrainer: one line
    record_trl(trainer, store="episodes.db")           # (AsyncGRPOTrainer + HarnessRolloutWorker too)

    from openenv.training import TrainingRun           # any other loop
    with TrainingRun("episodes.db", "ppo-3") as run: ...

See docs/training.md.
"""

from __future__ import annotations

from .run import TrainingRun, open_store
from .trl import TrlRecorder, record_trl

__all__ = ["TrainingRun", "TrlRecorder", "open_store", "record_trl"]

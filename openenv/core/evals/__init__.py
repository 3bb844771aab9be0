"""Evaluation harnesses, at 0.10's import path ``openenv.core.evals``.

``EvalHarness`` is the interface, ``EvalConfig``/``EvalResult`` its input and output, and
``InspectAIHarness`` runs an Inspect AI task (inspect-ai is the ``evals`` extra, imported only when
an evaluation runs) and records each sample as an episode of the studio's store.
"""

from .base import EvalHarness
from .inspect_harness import InspectAIHarness
from .types import EvalConfig, EvalResult

__all__ = ["EvalHarness", "EvalConfig", "EvalResult", "InspectAIHarness"]

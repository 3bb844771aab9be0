"""``InspectAIHarness``: runs an Inspect AI task through ``inspect_ai.eval`` and returns its metrics.

inspect-ai is an optional extra (``pip install 'openenv[evals]'``), imported only inside ``run``.
Beyond 0.10, each evaluated sample is also recorded as an episode of our episode store (see
``inspect_recording``), so the studio lists an evaluation per sample.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from .base import EvalHarness

__all__ = ["InspectAIHarness"]

INSTALL_HINT = "Install it with: pip install 'inspect-ai>=0.3.0'"
# Passed to inspect_ai.eval only when truthy (a dict) or not None (the rest), as 0.10 does.
_PASSED_IF_TRUTHY = ("task_args", "model_args")
_PASSED_IF_SET = ("max_samples", "max_connections", "temperature", "max_tokens", "epochs", "solver", "scorer",
                  "model_base_url")


class InspectAIHarness(EvalHarness):
    """Evaluation harness over Inspect AI's ``eval()``.

    ``eval_parameters`` of ``run``: ``model`` (required, e.g. ``"openai/gpt-4o"``), ``task`` (a task
    object, a registered name or ``file.py@name``; default: the ``dataset`` argument),
    ``task_args``/``model_args`` (dicts), and ``max_samples``, ``max_connections``, ``temperature``,
    ``max_tokens``, ``epochs``, ``solver``, ``scorer``, ``model_base_url`` (passed when set).

    Args:
        log_dir: where Inspect AI writes its logs (None: Inspect AI's default).
        store: the episode store receiving one episode per sample: an ``EpisodeStore`` or a
            target (SQLite path, ``postgresql://`` URL); None: ``default_store_target()``, the
            studio's store.
        label: the recorded run's label (default: the task name).
        record: False records nothing (0.10's behaviour).
    """

    def __init__(self, *, log_dir: str | None = None, store: Any = None, label: str | None = None,
                 record: bool = True) -> None:
        self.log_dir = log_dir
        self.store = store
        self.label = label
        self.record = record
        self.last_log: Any = None
        self.last_episode_ids: list[str] = []

    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        """Run the Inspect AI evaluation; returns ``{metric name: value}`` over all scorers.

        Raises ImportError without inspect-ai, ValueError without ``model``, RuntimeError when
        Inspect AI returns no log or a log whose status is not ``success``.
        """
        try:
            from inspect_ai import eval as inspect_eval
        except ImportError:
            raise ImportError(f"inspect-ai is required for InspectAIHarness. {INSTALL_HINT}") from None

        model = eval_parameters.get("model")
        if model is None:
            raise ValueError("eval_parameters must include 'model' (e.g. 'openai/gpt-4o', 'hf/meta-llama/...').")
        task = eval_parameters.get("task", dataset)
        logs = inspect_eval(task, model=model, **self._build_eval_kwargs(eval_parameters))
        if not logs:
            raise RuntimeError("Inspect AI evaluation returned no logs. Check that the task and model arguments are valid.")
        log = logs[0]
        self.last_log = log
        scores = self._extract_scores(log)
        self._record(log, scores, harness_version=harness_version, library_versions=library_versions,
                     dataset=dataset)
        if log.status != "success":
            raise RuntimeError(f"Inspect AI evaluation failed with status: {log.status}")
        return scores

    def _build_eval_kwargs(self, eval_parameters: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments given to ``inspect_ai.eval`` besides the task and model."""
        kwargs = {k: eval_parameters[k] for k in _PASSED_IF_TRUTHY if eval_parameters.get(k)}
        kwargs.update({k: eval_parameters[k] for k in _PASSED_IF_SET if eval_parameters.get(k) is not None})
        if self.log_dir is not None:
            kwargs["log_dir"] = self.log_dir
        return kwargs

    def _extract_scores(self, log: Any) -> dict[str, Any]:
        """Every scorer's metrics of ``log.results`` as one flat ``{metric name: value}``."""
        results = log.results
        if results is None:
            return {}
        return {name: metric.value for score in results.scores for name, metric in score.metrics.items()}

    def _record(self, log: Any, scores: dict[str, Any], **context: Any) -> None:
        self.last_episode_ids = []
        if not self.record or not getattr(log, "samples", None):
            return
        from openenv.recording import EpisodeStore, RecordingError, default_store_target

        from .inspect_recording import record_eval_log

        store = self.store
        owned = not isinstance(store, EpisodeStore)
        try:
            if owned:
                store = EpisodeStore(str(store) if isinstance(store, (str, Path)) else default_store_target())
            try:
                self.last_episode_ids = record_eval_log(store, log, scores=scores, label=self.label,
                                                        harness=self.name, **context)
            finally:
                if owned:
                    store.close()
        except RecordingError as exc:  # the scores stand; say why the samples are not in the store
            warnings.warn(f"InspectAIHarness could not record the samples: {exc}", RuntimeWarning, stacklevel=3)

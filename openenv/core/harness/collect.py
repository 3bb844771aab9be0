"""Collect rollouts into a dataset (0.10's ``openenv.core.harness.collect``).

    runner = CollectRunner(session_factory=factory, harness_adapter=MCPHarnessAdapter(),
                           serializer=RolloutSerializer("out/"), limits=HarnessRunLimits(max_turns=9))
    result = runner.run(model_step=build_model_step(client), num_episodes=100)   # resumable

``results.jsonl`` holds one ``EpisodeRecord`` per line (a ``messages`` column for TRL's
``SFTTrainer`` / ``datasets.Dataset.from_json``); ``metadata.json`` sits beside it. A run skips the
episode ids already on disk unless ``resume=False`` (which moves the old file aside).
``push_to_hf_hub``/``build_dataset_readme`` publish such a directory (``collect_hub``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from openenv.core.env_server.mcp_types import Tool
from openenv.core.llm_client import LLMClient

from .collect_hub import README_FILENAME, build_dataset_readme, push_to_hf_hub
from .rollout_func import rollout_final_state, tool_trace_entry_to_plain
from .rollout_harness import HarnessAdapter
from .rollout_sessions import ResourceSessionFactory, _resolve_env_reward
from .rollout_types import HarnessRolloutResult, HarnessRunLimits, ModelStep, ModelStepResult, VerifyResult

__all__ = [
    "METADATA_FILENAME",
    "README_FILENAME",
    "RESULTS_FILENAME",
    "CollectResult",
    "CollectRunner",
    "EpisodeRecord",
    "RolloutSerializer",
    "build_dataset_readme",
    "build_model_step",
    "push_to_hf_hub",
]

RESULTS_FILENAME = "results.jsonl"
METADATA_FILENAME = "metadata.json"
_SUPPORTED_SAMPLING_KEYS = frozenset({"temperature", "max_tokens", "top_p"})


@dataclass
class EpisodeRecord:
    """One collected episode as it is written to ``results.jsonl``."""

    episode_id: str
    messages: list[dict[str, Any]]
    reward: float
    done: bool
    tool_trace: list[dict[str, Any]]
    metrics: dict[str, Any]
    verify_metrics: dict[str, Any]
    artifacts: dict[str, Any]
    task: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_rollout(cls, episode_id: str, rollout: HarnessRolloutResult, verify: VerifyResult, task: Any = None,
                     extra: dict[str, Any] | None = None) -> EpisodeRecord:  # fmt: skip
        """The record of a rollout and its verification; the reward is ``_resolve_env_reward``'s,
        so a ``verify()`` that contradicts the environment's reward raises ``ValueError``."""
        return cls(
            episode_id=episode_id,
            messages=[dict(m) for m in rollout.messages],
            reward=_resolve_env_reward(rollout, verify),
            done=bool(rollout.done or verify.done),
            tool_trace=[tool_trace_entry_to_plain(e) for e in rollout.tool_trace],
            metrics=dict(rollout.metrics),
            verify_metrics=dict(verify.metrics),
            artifacts=dict(verify.artifacts),
            task=task,
            extra=dict(extra or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (anything not JSON-native becomes its ``str``)."""
        return json.loads(json.dumps(asdict(self), default=str))


class RolloutSerializer:
    """Append-only ``results.jsonl`` + ``metadata.json`` in ``output_dir``."""

    def __init__(self, output_dir: Path | str) -> None:
        self._output_dir = Path(output_dir)

    @property
    def output_dir(self) -> Path:
        return self._output_dir

    @property
    def results_path(self) -> Path:
        return self._output_dir / RESULTS_FILENAME

    @property
    def metadata_path(self) -> Path:
        return self._output_dir / METADATA_FILENAME

    def write_episode(self, record: EpisodeRecord) -> None:
        """Append one record as a line (after a newline if a complete last line lacks one)."""
        self._output_dir.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record.to_dict(), default=str) + "\n").encode("utf-8")
        with self.results_path.open("a+b") as fh:
            fh.write(self._separator(fh) + line)

    def write_metadata(self, metadata: dict[str, Any]) -> None:
        """Write ``metadata.json`` (indented JSON), replacing what was there."""
        self._output_dir.mkdir(parents=True, exist_ok=True)
        self.metadata_path.write_text(json.dumps(metadata, indent=2, default=str), encoding="utf-8")

    def collected_episode_ids(self) -> set[str]:
        """The episode ids already in ``results.jsonl`` (for resume); ``ValueError`` naming the file
        and line when a non-empty line is not a JSON object with a string ``episode_id``."""
        if not self.results_path.exists():
            return set()
        with self.results_path.open("rb") as fh:
            return {self._episode_id(raw.strip(), n) for n, raw in enumerate(fh, start=1) if raw.strip()}

    def _separator(self, fh: BinaryIO) -> bytes:
        end = fh.seek(0, 2)
        if not end:
            return b""
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return b""
        tail, pos = b"", end  # the last line has no newline: it must be a whole record, then gets one
        while pos:
            size = min(pos, 8192)
            pos -= size
            fh.seek(pos)
            tail = fh.read(size) + tail
            cut = tail.rfind(b"\n", 0, len(tail))
            if cut >= 0:
                tail = tail[cut + 1 :]
                break
        if tail.strip():
            self._episode_id(tail, "final line")
        return b"\n"

    def _episode_id(self, raw: bytes, line: int | str) -> str:
        where = f"{self.results_path}:{line}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: invalid UTF-8: {exc}") from exc
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: invalid JSON: {exc.msg}") from exc
        if not isinstance(payload, dict):
            raise ValueError(f"{where}: expected an object")
        episode_id = payload.get("episode_id")
        if not isinstance(episode_id, str):
            raise ValueError(f"{where}: expected a string episode_id")
        return episode_id


@dataclass
class CollectResult:
    """What ``CollectRunner.run()`` did (``episode_ids``: every planned id, skipped ones included)."""

    num_collected: int
    num_skipped: int
    num_dropped: int
    num_failed: int
    episode_ids: list[str]
    avg_reward: float
    success_rate: float


class _Progress:
    """``Collecting k/n collected=c reward=r`` on stderr: redrawn on a terminal, else every tenth."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.collected, self.avg = total, 0, 0, 0.0
        self.tty = sys.stderr.isatty()
        self._tenth = -1

    def note(self, text: str) -> None:
        sys.stderr.write(("\n" if self.tty else "") + text + "\n")

    def advance(self, collected: int | None = None, avg: float | None = None) -> None:
        self.done += 1
        self.collected = self.collected if collected is None else collected
        self.avg = self.avg if avg is None else avg
        line = f"Collecting {self.done}/{self.total} collected={self.collected} reward={self.avg:.2f}"
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if self.done == self.total else ""))
        elif self.done * 10 // max(1, self.total) != self._tenth:
            self._tenth = self.done * 10 // max(1, self.total)
            sys.stderr.write(line + "\n")


class CollectRunner:
    """Repeated rollouts into a ``RolloutSerializer``; resume state lives on disk only, so one
    runner may serve several runs. Task ``i`` goes with planned episode ``i`` even when resumed."""

    def __init__(self, *, session_factory: ResourceSessionFactory, harness_adapter: HarnessAdapter,
                 serializer: RolloutSerializer, tasks: Iterable[Any] | None = None,
                 limits: HarnessRunLimits | None = None) -> None:  # fmt: skip
        self._session_factory = session_factory
        self._harness_adapter = harness_adapter
        self._serializer = serializer
        self._tasks: Iterator[Any] | None = iter(tasks) if tasks is not None else None
        self._limits = limits

    def _next_task(self) -> Any:
        return None if self._tasks is None else next(self._tasks, None)

    def _collect_one(self, episode_id: str, task: Any, model_step: ModelStep) -> EpisodeRecord:
        session = None
        try:
            session = self._session_factory.create(task=task, episode_id=episode_id)
            rollout = self._harness_adapter.run_white_box(model_step=model_step, session=session, limits=self._limits)
            verify = session.verify(transcript=rollout.messages, final_state=rollout_final_state(rollout))
            return EpisodeRecord.from_rollout(episode_id=episode_id, rollout=rollout, verify=verify, task=task)
        finally:
            if session is not None:
                session.close()

    def run(self, *, model_step: ModelStep, num_episodes: int, episode_id_prefix: str = "ep", resume: bool = True,
            should_keep: Callable[[EpisodeRecord], bool] | None = None) -> CollectResult:  # fmt: skip
        """Collect ``num_episodes`` planned episodes ``<prefix>-000000``...; a failed episode is
        counted and reported, never raised; ``should_keep(record)`` false drops a record."""
        planned = [f"{episode_id_prefix}-{i:06d}" for i in range(num_episodes)]
        if resume:
            already = self._serializer.collected_episode_ids()
        else:
            self._reset_results_file()
            already = set()
        skipped = dropped = failed = 0
        rewards: list[float] = []
        progress = _Progress(len(planned))
        for episode_id in planned:
            task = self._next_task()
            if episode_id in already:
                skipped += 1
                progress.advance()
                continue
            try:
                record = self._collect_one(episode_id, task, model_step)
            except Exception as exc:  # one broken episode never stops the run
                failed += 1
                progress.note(f"failed {episode_id}: {type(exc).__name__}: {exc}")
                progress.advance()
                continue
            if should_keep is not None and not should_keep(record):
                dropped += 1
                progress.advance()
                continue
            self._serializer.write_episode(record)
            rewards.append(record.reward)
            progress.advance(len(rewards), sum(rewards) / len(rewards))
        return CollectResult(
            num_collected=len(rewards), num_skipped=skipped, num_dropped=dropped, num_failed=failed,
            episode_ids=planned, avg_reward=sum(rewards) / len(rewards) if rewards else 0.0,
            success_rate=sum(r > 0 for r in rewards) / len(rewards) if rewards else 0.0,
        )  # fmt: skip

    def _reset_results_file(self) -> None:
        path = self._serializer.results_path
        if not path.exists():
            return
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        backup = path.with_name(f"{path.stem}.{stamp}.bak{path.suffix}")
        n = 1
        while backup.exists():
            backup = path.with_name(f"{path.stem}.{stamp}.{n}.bak{path.suffix}")
            n += 1
        path.replace(backup)
        warnings.warn(f"resume=False moved existing results file to {backup}", RuntimeWarning, stacklevel=3)


def _tool_to_mcp_dict(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


@functools.cache
def _model_step_loop() -> asyncio.AbstractEventLoop:
    """One event loop, on a daemon thread, for every model step (async clients keep their pool on
    the loop of their first request)."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="openenv-model-step", daemon=True).start()
    return loop


def build_model_step(llm_client: LLMClient, *, system_prompt: str | None = None) -> ModelStep:
    """Any ``LLMClient`` (``complete_with_tools``) as a synchronous ``ModelStep``.

    ``system_prompt`` is put first when the conversation has no system message; sampling keys
    other than ``temperature``, ``max_tokens`` and ``top_p`` are dropped with a ``RuntimeWarning``.
    """
    loop = _model_step_loop()

    def model_step(messages: list[dict[str, Any]], tools: list[Tool], sampling: dict[str, Any]) -> ModelStepResult:
        convo = list(messages)
        if system_prompt and not any(m.get("role") == "system" for m in convo):
            convo.insert(0, {"role": "system", "content": system_prompt})
        dropped = sorted(set(sampling) - _SUPPORTED_SAMPLING_KEYS)
        if dropped:
            warnings.warn("Dropping unsupported sampling keys: " + ", ".join(dropped), RuntimeWarning, stacklevel=2)
        kept = {k: v for k, v in sampling.items() if k in _SUPPORTED_SAMPLING_KEYS}
        call = llm_client.complete_with_tools(messages=convo, tools=[_tool_to_mcp_dict(t) for t in tools], **kept)
        return ModelStepResult(response=asyncio.run_coroutine_threadsafe(call, loop).result())

    return model_step

"""The environment contract (also serves the published ``openenv.core.env_server.interfaces``).

Lifecycle of one environment instance (one session):

    created ──reset()──▶ running ──step()*──▶ done ──reset()──▶ running … ──close()──▶ closed

* ``reset(seed=None, episode_id=None, **kwargs)`` starts an episode and returns the first
  observation. The server passes only the kwargs that ``reset`` accepts.
* ``step(action, timeout_s=None, **kwargs)`` applies one action and returns an observation whose
  ``reward``/``done`` fields end the step. The server enforces ``timeout_s`` as a deadline;
  an environment may also honour it itself.
* ``state`` describes the episode. The default tracks ``episode_id`` and ``step_count``.
* ``close()`` releases resources; the server calls it when the session ends.

``reset_async``/``step_async``/``close_async`` are awaited on the server's event loop when an
environment overrides them (they must not block); plain methods run in a worker thread.
Set ``SUPPORTS_CONCURRENT_SESSIONS = True`` when several instances may live side by side,
so one server can hold many sessions; ``REQUIRES_SINGLE_THREAD_EXECUTOR = True`` runs every
sync call of every session on one shared thread.

As in the published 0.10, ``Environment[A, O, S]`` is generic, ``__init__(transform=None,
rubric=None)`` keeps ``self.transform``/``self.rubric``, and the environment itself calls
``self._apply_rubric(action, obs)`` in ``step`` and ``self._reset_rubric()`` in ``reset``:
the server never calls the rubric.
"""

from __future__ import annotations

import inspect
import uuid
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from typing_extensions import TypedDict

from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State

if TYPE_CHECKING:
    from openenv.core.rubrics.base import Rubric

__all__ = [
    "Action",
    "Environment",
    "Message",
    "ModelTokenizer",
    "Observation",
    "State",
    "TaskProvider",
    "Transform",
]

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


class Message(TypedDict):
    """A message in a conversation.

    Compatible with Huggingface chat template format.
    """

    role: str
    content: str


class ModelTokenizer(Protocol):
    """What chat environments need of a tokenizer (Hugging Face ``transformers`` compatible)."""

    def apply_chat_template(
        self, conversation: list[Message], tokenize: bool = True, return_tensors: str | None = None, **kwargs: Any
    ) -> Any: ...

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs: Any) -> str: ...


class TaskProvider(Protocol):
    """Optional task discovery an environment may declare structurally (published 0.10 name).

    Any of these (sync or async) is served by the Task API (``task_routes``), on a short-lived
    environment: they must be side-effect free. Select a task by passing split/index to ``reset``.
    """

    def list_splits(self) -> list[Any]: ...

    def list_tasks(self, split: str) -> list[Any]: ...

    def num_tasks(self, split: str) -> int: ...

    def get_task(self, split: str, index: int) -> Any: ...

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]: ...


class Transform(ABC, Generic[ObsT]):
    """Maps an observation to a (possibly modified) observation: rewards, metrics, masking."""

    @abstractmethod
    def __call__(self, observation: ObsT) -> ObsT:
        """Return the transformed observation."""


class Environment(ABC, Generic[ActT, ObsT, StateT]):
    """Base class of an environment served by ``create_app``.

    Args:
        transform: applied by :meth:`_apply_transform` (the environment calls it).
        rubric: a :class:`openenv.core.rubrics.Rubric`; :meth:`_apply_rubric` scores a step with it.
    """

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = False
    REQUIRES_SINGLE_THREAD_EXECUTOR: ClassVar[bool] = False

    # Class-level defaults so subclasses that never call ``super().__init__()`` still have them.
    transform: Transform | None = None
    rubric: Rubric | None = None

    def __init__(self, transform: Transform | None = None, rubric: Rubric | None = None) -> None:
        self.transform = transform
        self.rubric = rubric

    @abstractmethod
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ObsT:
        """Start a new episode and return its first observation."""

    @abstractmethod
    def step(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> ObsT:
        """Apply ``action`` and return the resulting observation."""

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ObsT:
        """Async variant; the default calls :meth:`reset`."""
        return self.reset(seed=seed, episode_id=episode_id, **kwargs)

    async def step_async(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> ObsT:
        """Async variant; the default calls :meth:`step`."""
        return self.step(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> StateT:
        """The episode's state; the default is kept up to date by the server."""
        default = self.__dict__.get("_openenv_default_state")
        if default is None:
            default = State()
            self.__dict__["_openenv_default_state"] = default
        return default  # type: ignore[return-value]

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources held by this instance."""

    async def close_async(self) -> None:
        """Async variant; the default calls :meth:`close`."""
        self.close()

    def get_metadata(self) -> EnvironmentMetadata:
        """Name, description and version shown by ``GET /metadata`` (0.10's defaults:
        ``"<Class> environment"``, ``"1.0.0"``); override it to describe your environment."""
        name = type(self).__name__
        return EnvironmentMetadata(name=name, description=f"{name} environment", version="1.0.0")

    # -- transform and rubric hooks (called by the environment, as in 0.10) ------------------

    def _apply_transform(self, observation: ObsT) -> ObsT:
        """``self.transform(observation)``, or the observation unchanged without a transform."""
        return self.transform(observation) if self.transform is not None else observation

    def _apply_rubric(self, action: ActT, observation: ObsT) -> float:
        """The rubric's score of this step (``0.0`` without a rubric)."""
        return self.rubric(action, observation) if self.rubric is not None else 0.0

    async def _apply_rubric_async(self, action: ActT, observation: ObsT) -> float:
        """Like :meth:`_apply_rubric`; awaits a rubric that returns a coroutine."""
        if self.rubric is None:
            return 0.0
        result = self.rubric(action, observation)
        return await result if inspect.isawaitable(result) else result

    def _reset_rubric(self) -> None:
        """Clear the rubric's trajectory state (call it in ``reset``)."""
        if self.rubric is not None:
            self.rubric.reset()

    async def _reset_rubric_async(self) -> None:
        """Like :meth:`_reset_rubric`; uses the rubric's ``reset_async`` when it has one."""
        if self.rubric is None:
            return
        reset_async = getattr(self.rubric, "reset_async", None)
        result = reset_async() if callable(reset_async) else self.rubric.reset()
        if inspect.isawaitable(result):
            await result

    # -- optional web hooks -------------------------------------------------------------------

    def render_web(self, observation: dict[str, Any]) -> str | None:
        """HTML drawing ``observation`` (the wire dict plus ``reward``/``done``) on ``/web``; ``None``: none."""
        return None

    def web_actions(self, observation: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """One-click ``(label, action_dict)`` pairs for ``/web``; the default offers none."""
        return []

    # -- helpers used by the server ---------------------------------------------------------

    @classmethod
    def overrides(cls, env: object, name: str) -> bool:
        """True when ``env``'s class overrides ``Environment.<name>``."""
        impl = getattr(type(env), name, None)
        return impl is not None and impl is not getattr(Environment, name, None)

    @staticmethod
    def new_episode_id() -> str:
        return uuid.uuid4().hex

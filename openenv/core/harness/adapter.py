"""The turn-based adapter contract of an external agentic harness (RFC 005), and its errors.

An :class:`AgenticHarnessAdapter` owns one long-lived harness process (OpenClaw, Claude Code,
opencode...) that keeps its conversation across turns; each :meth:`~AgenticHarnessAdapter.send_message`
is one turn, during which the harness runs its own model/tool loop. (The trainer-side
``openenv.core.harness.HarnessAdapter`` is different: it drives a whole episode in one call.)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness.config import HarnessConfig
from openenv.core.harness.events import HarnessEvent, HarnessEventType, HarnessResponse

__all__ = [
    "AgenticHarnessAdapter",
    "HarnessError",
    "HarnessNotRunningError",
    "HarnessStartupError",
    "HarnessTurnTimeoutError",
]


class HarnessError(Exception):
    """A harness failed (base of the harness errors)."""


class HarnessStartupError(HarnessError):
    """The harness process could not be started, or did not become ready in time."""


class HarnessNotRunningError(HarnessError):
    """The operation needs a running harness and there is none (never started, exited, or died)."""


class HarnessTurnTimeoutError(HarnessError):
    """One conversational turn overran its wall-clock budget."""


class AgenticHarnessAdapter(ABC):
    """Base class of an adapter driving one turn-based harness process.

    Subclasses implement :meth:`start`, :meth:`stop` (idempotent), :meth:`inject_tools` (called
    before :meth:`start`), :meth:`send_message_streaming` (ends with a ``TURN_COMPLETE`` event) and
    :meth:`is_alive`; :meth:`send_message` collects one turn.

    Attributes:
        BUILTIN_TOOL_NAMES: the harness's own tool names; injected environment tools that clash
            with them are renamed (see :func:`~openenv.core.harness.tools.resolve_tool_conflicts`).
    """

    BUILTIN_TOOL_NAMES: frozenset[str] = frozenset()

    def __init__(self, config: HarnessConfig):
        self.config = config

    @abstractmethod
    async def start(self, working_directory: str) -> None:
        """Start the harness in ``working_directory``.

        Raises:
            HarnessStartupError: it did not start or become ready in time.
        """

    @abstractmethod
    async def stop(self) -> None:
        """Stop the harness and release its resources; a no-op when it is not running."""

    @abstractmethod
    async def inject_tools(self, tools: list[Tool], bridge_url: str | None = None) -> None:
        """Make ``tools`` (already conflict-resolved) known to the harness before it starts.

        ``bridge_url`` is the loopback MCP endpoint serving them, when the environment has tools.
        How they are injected (config file, flags, environment variables) is the harness's business.
        """

    @abstractmethod
    def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        """Send one user ``message``; yield the turn's events, the last a ``TURN_COMPLETE`` whose
        ``data`` has ``response`` (and optionally ``done``)."""

    @abstractmethod
    async def is_alive(self) -> bool:
        """Whether the harness process is running."""

    async def send_message(self, message: str) -> HarnessResponse:
        """Run one turn and return it whole (response text, all events, the harness's done flag).

        Raises:
            HarnessError: the event stream ended without a ``TURN_COMPLETE`` event.
        """
        events = [event async for event in self.send_message_streaming(message)]
        if not events or events[-1].type is not HarnessEventType.TURN_COMPLETE:
            raise HarnessError("harness event stream ended without a TURN_COMPLETE event")
        final = events[-1].data
        return HarnessResponse(response=str(final.get("response", "")), events=events, done=bool(final.get("done", False)))

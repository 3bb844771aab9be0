"""Echo environment types, shaped like the classic published echo env."""

from __future__ import annotations

from pydantic import Field

from openenv.core.env_server.types import Action, Observation, State

__all__ = ["EchoAction", "EchoObservation", "EchoState"]


class EchoAction(Action):
    """A message to echo back."""

    message: str = Field(description="Text to echo")


class EchoObservation(Observation):
    """The echoed message and its length."""

    echoed_message: str = Field(default="", description="The message, echoed")
    message_length: int = Field(default=0, ge=0, description="Length of the message")


class EchoState(State):
    """Episode id, step count and the last message echoed."""

    last_message: str = ""

"""The echo env's action and observation (0.10's ``Action``/``Observation`` base classes)."""

from openenv.core.env_server.types import Action, Observation


class EchoAction(Action):
    """A message to echo back."""

    message: str


class EchoObservation(Observation):
    """The echoed message and its length (reward: 0.1 per character)."""

    echoed_message: str = ""
    message_length: int = 0

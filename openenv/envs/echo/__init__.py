"""The echo environment."""

from openenv.envs.echo.client import EchoEnv
from openenv.envs.echo.environment import EchoEnvironment
from openenv.envs.echo.models import EchoAction, EchoObservation, EchoState

__all__ = ["EchoAction", "EchoEnv", "EchoEnvironment", "EchoObservation", "EchoState"]

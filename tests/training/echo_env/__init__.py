"""A stand-in for the ``openenv-echo-env`` package TRL's OpenEnv guide installs (its HF Space):
``EchoEnv`` (client) and ``echo_env.models.EchoAction``, written against 0.10's public API so the
same package runs under ours and under the published 0.10. The server is ``echo_server.py``."""

from .client import EchoEnv
from .models import EchoAction, EchoObservation

__all__ = ["EchoAction", "EchoEnv", "EchoObservation"]

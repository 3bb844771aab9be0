"""ASGI app for the echo environment: ``openenv serve echo`` or ``uvicorn openenv.envs.echo.app:app``."""

from openenv.core.env_server.http_server import create_app
from openenv.envs.echo.environment import EchoEnvironment
from openenv.envs.echo.models import EchoAction, EchoObservation

app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo")

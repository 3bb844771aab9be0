"""What ``app.routes`` lists for a 0.10-style app (simulation and production, ``create_app`` and a
plain ``FastAPI()`` given ``HTTPEnvServer.register_routes``). One JSON line per app."""

import json

from fastapi import FastAPI

from openenv.core.env_server.http_server import HTTPEnvServer, create_app, create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class PingAction(Action):
    message: str = ""


class PingEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def reset(self, seed=None, episode_id=None, **kwargs):
        return Observation()

    def step(self, action, timeout_s=None, **kwargs):
        return Observation()

    @property
    def state(self):
        return State()


def listed(app):
    """(kind, path) of each route with a path: kind is WS or HTTP (a FastAPI or a Starlette route)."""
    return sorted({("WS" if "WebSocket" in type(r).__name__ else "HTTP", r.path) for r in app.routes if hasattr(r, "path")})


for name, app in [
    ("create_fastapi_app", create_fastapi_app(PingEnv, PingAction, Observation)),
    ("create_app", create_app(PingEnv, PingAction, Observation)),
    ("production", create_fastapi_app(PingEnv, PingAction, Observation, mode="production")),
]:
    print(json.dumps({"app": name, "routes": listed(app)}))
plain = FastAPI()
HTTPEnvServer(PingEnv, PingAction, Observation).register_routes(plain)
print(json.dumps({"app": "register_routes", "routes": listed(plain)}))

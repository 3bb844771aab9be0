"""``openenv_core`` (the historical import path older catalogue envs use, e.g. snake_env) is an
alias of ``openenv.core``: the same module objects, and an env written against it serves."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import httpx

from tests.server_utils import running_server

ENV = textwrap.dedent("""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from openenv_core.env_server.http_server import create_app
        from openenv_core.env_server.interfaces import Environment
        from openenv_core.env_server.types import Action, Observation, State
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)

    class Move(Action):
        d: int = 1

    class Seen(Observation):
        pos: int = 0

    class Snake(Environment):
        def __init__(self):
            super().__init__()
            self.pos = 0
        def reset(self, seed=None, episode_id=None, **kwargs):
            self.pos = 0
            return Seen(pos=0)
        def step(self, action, timeout_s=None, **kwargs):
            self.pos += action.d
            return Seen(pos=self.pos, reward=float(self.pos))
        @property
        def state(self):
            return State(step_count=self.pos)

    app = create_app(Snake, Move, Seen, env_name="snake")
""")


def test_the_same_modules_under_both_names() -> None:
    code = ("import warnings; warnings.simplefilter('ignore');"
            "import openenv_core.env_server.http_server as a, openenv.core.env_server.http_server as b;"
            "import openenv_core.env_server.types as c, openenv.core.env_server.types as d;"
            "import openenv_core; from openenv_core import GenericEnvClient, ServerMode;"
            "print(a is b and c is d and openenv_core.ServerMode is d.ServerMode)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
    missing = subprocess.run([sys.executable, "-W", "ignore", "-c", "import openenv_core.nope"],
                             capture_output=True, text=True, timeout=60)
    assert "No module named 'openenv_core.nope'" in missing.stderr


def test_an_env_written_against_openenv_core_serves() -> None:
    namespace: dict = {}
    exec(compile(ENV, "snake_env_models.py", "exec"), namespace)
    with running_server(namespace["app"]) as url:
        assert httpx.post(url + "/reset", json={}).json()["observation"] == {"pos": 0}
        step = httpx.post(url + "/step", json={"action": {"d": 2}}).json()
        assert step["observation"] == {"pos": 2} and step["reward"] == 2.0

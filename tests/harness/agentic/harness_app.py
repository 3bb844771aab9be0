"""A ``HarnessEnvironment`` over the fake harness, with two MCP tools, served by ``create_app``.

Works on ours and on the published 0.10 (``serve_file.py harness_app.py app <port>``).
``read_file`` clashes with the harness's built-in of that name, so it is injected (and served
by the bridge) as ``env_read_file``. ``FAKE_MODEL_URL`` in the environment reaches the harness;
``FAKE_TURN_TIMEOUT`` sets the turn budget (``session_timeout_s``, default 20 s).
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fake_adapter import FakeHarnessAdapter, fake_config  # noqa: E402
from fastmcp import FastMCP  # noqa: E402

from openenv.core.env_server.http_server import create_app  # noqa: E402
from openenv.core.env_server.types import Observation  # noqa: E402
from openenv.core.harness import HarnessAction, HarnessEnvironment  # noqa: E402

FILES = {"notes.txt": "remember the milk"}


def build_mcp():
    mcp = FastMCP("fake-harness-tools")

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool
    def read_file(path: str) -> str:
        """Read one of the environment's files."""
        if path not in FILES:
            raise ValueError(f"no such file: {path}")
        return FILES[path]

    return mcp


def make_env():
    env_vars = {k: os.environ[k] for k in ("FAKE_MODEL_URL",) if k in os.environ}
    turn_s = float(os.environ.get("FAKE_TURN_TIMEOUT", "20"))
    config = fake_config(env_vars=env_vars, session_timeout_s=turn_s)
    return HarnessEnvironment(FakeHarnessAdapter(config), mcp=build_mcp())


app = create_app(make_env, HarnessAction, Observation, env_name="fake_harness_env")

"""The seed README's Quick Start snippets run as written against our package."""

from __future__ import annotations

import importlib.util
import re
import socket
import sys
import types
from pathlib import Path

import pytest

from openenv.core import GenericEnvClient
from tests._require import require
from tests.server_utils import running_server

SEED_DIR = Path(__file__).parent / "seed"
SHARED_README = Path(__file__).resolve().parents[3] / "shared" / "seed" / "openenv-core-README.md"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"seed_{name}", SEED_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_snippets_are_verbatim_copies_of_the_seed_readme():
    if not SHARED_README.exists():
        pytest.skip("shared/ seed README not beside this checkout")
    blocks = re.findall(r"```python\n(.*?)```", SHARED_README.read_text(), re.S)
    assert (SEED_DIR / "seed_client.py").read_text() == blocks[0]
    assert (SEED_DIR / "seed_server.py").read_text() == blocks[1]


def test_seed_server_with_dataclasses_and_an_instance_serves_an_episode():
    seed = _load("seed_server")
    with running_server(seed.app) as url:
        with GenericEnvClient(base_url=url).sync() as client:
            first = client.reset()
            assert first.observation == {"response": "Ready"}
            result = client.step({"text": "hello"})
            assert result.observation == {"response": "Echo: hello"}
            assert result.reward == 1.0 and result.done is False
            state = client.state()
            assert state["step_count"] == 1 and state["episode_id"]
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                client.step({"txt": "typo"})


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_seed_client_sync_block_runs_as_written_against_localhost_8000():
    """The client snippet (minus its Docker-only asyncio.run line) against a server on :8000."""
    require(_port_free(8000), "port 8000 free for the seed client snippet")
    seed_server = _load("seed_server")
    source = (SEED_DIR / "seed_client.py").read_text()
    assert source.count("asyncio.run(main())") == 1
    runnable = source.replace("asyncio.run(main())", "")
    with running_server(seed_server.app, port=8000):
        module = types.ModuleType("seed_client_asis")
        sys.modules[module.__name__] = module
        try:
            exec(compile(runnable, "seed_client.py", "exec"), module.__dict__)
        finally:
            del sys.modules[module.__name__]
    namespace = module.__dict__
    assert namespace["step_result"].observation.response == "Echo: hello"
    assert namespace["result"].observation.response == "Ready"


def test_http_env_server_methods_named_in_the_seed_api_reference():
    from fastapi import FastAPI

    from openenv.core.env_server import HTTPEnvServer
    from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation

    server = HTTPEnvServer(EchoEnvironment, EchoAction, EchoObservation)
    app = FastAPI()
    server.register_routes(app)
    schema = app.openapi()["paths"]
    assert {"/reset", "/step", "/state", "/schema"} <= set(schema)
    assert server._deserialize_action({"message": "x"}) == EchoAction(message="x")
    wire = server._serialize_observation(EchoObservation(echoed_message="x", message_length=1, reward=0.1))
    assert wire == {"observation": {"echoed_message": "x", "message_length": 1}, "reward": 0.1, "done": False}

"""The published 0.10 author surface in process: import paths, create_app's positional order,
our own options beside them, gradio_builder without Gradio, the serialization helpers, the
single-thread executor and metadata loading."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import ValidationError
from websockets.sync.client import connect

from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.http_server import HTTPEnvServer, create_app
from openenv.core.env_server.interfaces import Action, Environment, Observation, State
from openenv.core.env_server.serialization import (
    deserialize_action,
    deserialize_action_with_preprocessing,
    serialize_observation,
)
from openenv.core.env_server.types import ConcurrencyConfig, ServerMode
from openenv.core.env_server.web_interface import (
    WebInterfaceManager,
    create_web_interface_app,
    load_environment_metadata,
)
from openenv.core.generic_client import GenericAction
from tests.server_utils import running_server


def _ws(url: str, *frames: dict) -> list[dict]:
    replies = []
    with connect(url.replace("http://", "ws://") + "/ws", open_timeout=30) as ws:
        for frame in frames:
            ws.send(json.dumps(frame))
            replies.append(json.loads(ws.recv(timeout=30)))
    return replies

PUBLISHED_NAMES = {
    "openenv.core.env_server.interfaces": ["Action", "Environment", "Message", "ModelTokenizer", "Observation", "State", "Transform"],
    "openenv.core.env_server.types": ["Action", "CodeExecResult", "ConcurrencyConfig", "HealthResponse", "HealthStatus",
                                      "Observation", "ServerMode", "State", "WSCloseMessage", "WSErrorCode",
                                      "WSErrorResponse", "WSIncomingMessage", "WSObservationResponse", "WSResetMessage",
                                      "WSStateMessage", "WSStateResponse", "WSStepMessage"],
    "openenv.core.env_server.http_server": ["HTTPEnvServer", "create_app", "create_fastapi_app"],
    "openenv.core.env_server.serialization": ["deserialize_action", "deserialize_action_with_preprocessing", "serialize_observation"],
    "openenv.core.env_server.base_transforms": ["CompositeTransform", "NullTransform"],
    "openenv.core.env_server.web_interface": ["create_web_interface_app", "load_environment_metadata"],
    "openenv.core.env_server.exceptions": ["ConcurrencyConfigurationError", "EnvironmentFactoryError",
                                           "SessionCapacityError", "SessionNotFoundError"],
    "openenv.core.env_server": ["CompositeTransform", "ConcurrencyConfig", "Environment", "HTTPEnvServer", "ServerMode",
                                "create_app", "create_fastapi_app", "serialize_observation"],
    "openenv.core.rubrics": ["ExponentialDiscountingTrajectoryRubric", "Gate", "LLMJudge", "Rubric", "RubricDict",
                             "RubricList", "Sequential", "TrajectoryRubric", "WeightedSum"],
    "openenv.core.rubrics.llm_judge": ["LLMJudge"],
    "openenv.core.llm_client": ["LLMClient", "OpenAIClient", "create_llm_client"],
    "openenv.core.generic_client": ["GenericAction", "GenericEnvClient"],
}


@pytest.mark.parametrize("module", sorted(PUBLISHED_NAMES))
def test_published_import_paths(module: str) -> None:
    mod = __import__(module, fromlist=["_"])
    for name in PUBLISHED_NAMES[module]:
        assert getattr(mod, name) is not None, name


class Move(Action):
    n: int = 1
    action_id: int = 0


class Seen(Observation):
    total: int = 0
    thread: int = 0


class Tally(State):
    total: int = 0


class Counter(Environment[Move, Seen, Tally]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = Tally()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Seen:
        self._state = Tally(episode_id=episode_id, total=seed or 0)
        return Seen(total=self._state.total, thread=threading.get_ident(), metadata={"kw": sorted(kwargs)})

    def step(self, action: Move, timeout_s: float | None = None, **kwargs: Any) -> Seen:
        self._state.total += action.n
        self._state.step_count += 1
        return Seen(total=self._state.total, reward=1.0, thread=threading.get_ident())

    @property
    def state(self) -> Tally:
        return self._state


class OneThread(Counter):
    REQUIRES_SINGLE_THREAD_EXECUTOR = True


def test_create_app_takes_the_published_positional_order() -> None:
    app = create_app(Counter, Move, Seen, "counter", 3, None, None, "Custom", False, True, "Title", Tally,
                     mode=ServerMode.SIMULATION, reset_observation_cls=Seen, web=False, step_timeout_s=5)
    server: HTTPEnvServer = app.state.env_server
    assert app.title == "Title" and server.sessions.max_sessions == 3 and server.state_cls is Tally
    assert server.dispatcher.default_timeout_s == 5
    with running_server(app) as url:
        assert httpx.post(url + "/reset", json={"seed": 2, "metadata": None}).json()["observation"]["total"] == 2
        step = httpx.post(url + "/step", json={"action": {"n": 4}, "metadata": {"k": 1}})
        assert step.status_code == 200 and step.json()["reward"] == 1.0
        assert set(httpx.get(url + "/schema").json()) == {"action", "observation", "reset", "reset_observation", "state"}
        assert httpx.get(url + "/state").json()["total"] == 0


def test_concurrency_config_sets_cap_and_idle_timeout() -> None:
    app = create_fastapi_app(Counter, Move, Seen, None, ConcurrencyConfig(max_concurrent_envs=2, session_timeout=7))
    server = app.state.env_server
    assert (server.sessions.max_sessions, server.sessions.idle_timeout_s) == (2, 7)
    assert create_fastapi_app(Counter, Move, Seen).state.env_server.sessions.max_sessions == 256


def test_register_routes_on_a_plain_app_runs_the_server_lifespan() -> None:
    server = HTTPEnvServer(Counter, Move, Seen, 2, None, "counter", Tally)
    app = FastAPI()
    server.register_routes(app)
    with running_server(app) as url:
        with connect(url.replace("http://", "ws://") + "/ws", open_timeout=30) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
            assert server.sessions.active == 1
        with connect(url.replace("http://", "ws://") + "/ws", open_timeout=30) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
    assert server.executor._shutdown  # the joined lifespan shut the server down with the app


def test_production_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_MODE", "production")
    with running_server(create_app(Counter, Move, Seen, web=False)) as url:
        assert httpx.post(url + "/reset").status_code == 404 and httpx.get(url + "/state").status_code == 404
        assert httpx.get(url + "/health").status_code == 200
    monkeypatch.setenv("OPENENV_MODE", "bogus")
    with pytest.raises(ValueError, match="Invalid mode"):
        create_app(Counter, Move, Seen, web=False)


def test_single_thread_executor_shares_one_thread() -> None:
    app = create_app(OneThread, Move, Seen, "one", 2, web=False)
    threads = set()
    with running_server(app) as url:
        for _ in range(2):
            for reply in _ws(url, {"type": "reset", "data": {}}, {"type": "step", "data": {"n": 1}}):
                threads.add(reply["data"]["observation"]["thread"])
    assert len(threads) == 1
    assert app.state.env_server.executor._max_workers == 1


def test_gradio_builder_without_gradio_logs_once_and_serves_our_page(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("webui.env_page")
    try:
        import gradio  # noqa: F401
    except ModuleNotFoundError:
        pass
    else:
        pytest.skip("Gradio is installed here; tests/compat010/test_gradio.py covers mounting")
    built = []
    with caplog.at_level(logging.WARNING, logger="openenv.server"):
        app = create_app(Counter, Move, Seen, "counter", gradio_builder=lambda *a: built.append(a))
    lines = [r.getMessage() for r in caplog.records if "gradio_builder" in r.getMessage()]
    assert len(lines) == 1 and "Gradio is not installed" in lines[0]
    assert built == []
    with running_server(app) as url:
        page = httpx.get(url + "/web")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]


def test_serialization_helpers_behave_as_published() -> None:
    obs = Seen(total=3, reward=0.5, metadata={"a": 1})
    assert serialize_observation(obs) == {
        "observation": {"total": 3, "thread": 0, "metadata": {"a": 1}}, "reward": 0.5, "done": False, "metadata": {"a": 1},
    }
    assert "metadata" not in serialize_observation(Seen())
    assert deserialize_action({"n": 2}, Move) == Move(n=2)
    with pytest.raises(ValidationError):
        deserialize_action({"n": "x"}, Move)
    assert deserialize_action_with_preprocessing({"action_id": "7"}, Move).action_id == 7
    assert dict(GenericAction(code="x", n=1)) == {"code": "x", "n": 1}
    assert repr(GenericAction(a=1)) == "GenericAction(a=1)"


def test_load_environment_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Counter\nCounts.", encoding="utf-8")
    monkeypatch.setenv("ENV_README_PATH", str(readme))
    meta = load_environment_metadata(Counter, "counter")
    assert (meta.name, meta.description, meta.version, meta.readme_content) == (
        "counter", "Counter environment", "1.0.0", "# Counter\nCounts.")
    assert load_environment_metadata(Counter()).name == "Counter"


def test_create_web_interface_app_and_its_manager() -> None:
    pytest.importorskip("webui.env_page")
    app = create_web_interface_app(Counter, Move, Seen, "counter")
    server = app.state.env_server
    manager = WebInterfaceManager(server, load_environment_metadata(Counter, "counter"))

    async def play() -> tuple[dict, dict, dict]:
        first = await manager.reset_environment({"seed": 5})
        second = await manager.step_environment({"n": 2})
        return first, second, manager.get_state()

    first, second, state = asyncio.run(play())
    assert first["observation"]["total"] == 5 and second["observation"]["total"] == 7 and state["total"] == 7
    assert isinstance(manager.env, Counter)
    with running_server(app) as url:
        assert httpx.get(url + "/web").status_code == 200


def test_published_server_attributes() -> None:
    server = HTTPEnvServer(Counter, Move, Seen, None, ConcurrencyConfig(max_concurrent_envs=2, session_timeout=9))
    assert isinstance(server._env_factory(), Counter)
    assert (server.max_concurrent_envs, server.active_sessions, server.is_concurrency_safe) == (2, 0, True)
    assert server.get_capacity_status().available_slots == 2
    assert server.concurrency_config == ConcurrencyConfig(max_concurrent_envs=2, session_timeout=9)
    instance = Counter()
    assert HTTPEnvServer(instance)._env_factory() is instance


def test_every_name_the_published_core_exports_resolves_here() -> None:
    """``from openenv.core import X`` for every X of 0.10's ``openenv.core.__all__`` (it re-exports
    all of ``openenv.core.env_server``: a catalogue env did ``from openenv.core import ServerMode``),
    asked of the published package itself; and a training script still imports no server code."""
    import os
    import subprocess
    import sys

    from tests.peer010 import peer010_python

    probe = "import json, openenv.core as c, openenv.core.env_server as s; print(json.dumps([c.__all__, s.__all__]))"
    done = subprocess.run([peer010_python(), "-P", "-c", probe], cwd="/", capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-2000:]
    core_names, server_names = json.loads(done.stdout)
    import openenv.core
    import openenv.core.env_server

    assert len(core_names) > 60
    assert [n for n in core_names if getattr(openenv.core, n, None) is None] == []
    assert [n for n in server_names if getattr(openenv.core.env_server, n, None) is None] == []
    light = subprocess.run([sys.executable, "-c", "import sys; from openenv.core import GenericEnvClient, StepResult;"
                            "print(sorted(m for m in sys.modules if m.startswith(('fastapi', 'openenv.core.env_server'))))"],
                           capture_output=True, text=True, timeout=60)
    assert light.stdout.strip() == "[]", light.stdout


def test_schema_publishes_a_models_own_json_schema_override() -> None:
    """A 0.10 env whose action overrides ``model_json_schema`` (thinkingbox_env: a union of
    action types) gets that schema on ``/schema``, as on 0.10; and the published MCP client's
    generic observation name resolves."""
    from openenv.core.mcp_client import GenericMCPObservation

    class Union(Action):
        @classmethod
        def model_json_schema(cls, *args, **kwargs):
            return {"oneOf": [{"title": "Custom"}]}

    with running_server(create_app(Counter, Union, Seen, env_name="u")) as url:
        assert httpx.get(url + "/schema").json()["action"] == {"oneOf": [{"title": "Custom"}]}
    assert GenericMCPObservation(extra_field=1).extra_field == 1

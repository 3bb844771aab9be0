"""openenv.auto: one resolver for bundled names, env directories (openenv.yaml), module:app,
installed env packages, local OpenEnv images and URLs; AutoEnv / AutoAction / EnvClient.from_env."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from openenv.auto import AutoAction, AutoEnv, EnvTarget, HubUnavailableError, TargetError, load_app, resolve
from openenv.core import EnvClient, GenericEnvClient, StepResult
from openenv.envs.echo import EchoAction, EchoEnv
from tests.containers.conftest import base_image, docker_engine, echo_image  # noqa: F401  (fixtures)
from tests.server_utils import running_server

MODELS = '''
from openenv.core.env_server.types import Action, Observation


class CountAction(Action):
    n: int = 1


class CountObservation(Observation):
    total: int = 0
'''
ENVIRONMENT = '''
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

from ..models import CountAction, CountObservation


class CountEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        self._state = State(episode_id="count", step_count=0)
        self.total = 0

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._state = State(episode_id=episode_id or "count", step_count=0)
        self.total = 0
        return CountObservation(total=0)

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        self.total += action.n
        return CountObservation(total=self.total, reward=float(action.n), done=self.total >= 10)

    @property
    def state(self):
        return self._state
'''
APP = '''
from openenv.core.env_server import create_app

from ..models import CountAction, CountObservation
from .count_environment import CountEnvironment

app = create_app(CountEnvironment, CountAction, CountObservation, env_name="count")
'''
CLIENT = '''
from openenv.core import EnvClient, StepResult
from openenv.core.client_types import split_observation

from .models import CountAction, CountObservation


class CountEnv(EnvClient):
    def _step_payload(self, action):
        return {"n": action.n}

    def _parse_result(self, payload):
        fields, meta = split_observation(payload)
        obs = CountObservation(**fields, reward=payload.get("reward"), done=payload.get("done", False))
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False), metadata=meta)

    def _parse_state(self, payload):
        return payload
'''
MANIFEST = '''
spec_version: 1
name: count_env
version: 0.1.0
type: space
runtime: fastapi
app: server.app:app
port: 8000
'''


def make_env_package(root: Path, module: str = "count_env") -> Path:
    """An env in 0.10's template layout (package, models, client, server/app.py, openenv.yaml)."""
    pkg = root / module
    (pkg / "server").mkdir(parents=True)
    for rel, text in {"__init__.py": "", "models.py": MODELS, "client.py": CLIENT, "openenv.yaml": MANIFEST,
                      "server/__init__.py": "", "server/count_environment.py": ENVIRONMENT,
                      "server/app.py": APP}.items():  # fmt: skip
        (pkg / rel).write_text(textwrap.dedent(text))
    return pkg


def test_names_resolve_to_bundled_envs():
    for name in ("echo", "echo-env", "echo_env"):
        found = resolve(name)
        assert found.kind == "bundled" and found.name == "echo" and found.app == "openenv.envs.echo.app:app"
    assert AutoAction.from_env("echo") is EchoAction
    with pytest.raises(TargetError, match="Unknown environment 'nope'.*echo"):
        resolve("nope")


def test_a_hub_name_says_the_hub_cannot_be_reached(monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules["openenv.auto.resolve"], "HUB_URL", "http://127.0.0.1:9")  # nothing listens
    with pytest.raises(HubUnavailableError, match="cannot be reached") as info:
        AutoEnv.from_env("openenv/echo_env")
    assert isinstance(info.value, TargetError) and info.value.code == "HUB_UNAVAILABLE"


def test_bundled_name_starts_a_server_and_closing_stops_it():
    env = AutoEnv.from_env("echo", wait_timeout=60)
    assert isinstance(env, EchoEnv)
    provider = env._provider
    with env:
        env.reset()
        assert env.step(EchoAction(message="auto")).observation.echoed_message == "auto"
    from openenv.core.containers.runtime import RuntimeStatus

    assert provider.status() is not RuntimeStatus.RUNNING


def test_an_env_directory_with_a_manifest(tmp_path):
    pkg = make_env_package(tmp_path)
    found = resolve(str(pkg))
    assert found.kind == "directory" and found.name == "count_env" and found.app == "count_env.server.app:app"
    assert found.manifest["spec_version"] == 1
    action = AutoAction.from_env(str(pkg))
    assert action.__name__ == "CountAction"
    env = AutoEnv.from_env(str(pkg), wait_timeout=60)
    assert type(env).__name__ == "CountEnv"
    with env:
        env.reset()
        result = env.step(action(n=4))
        assert isinstance(result, StepResult) and result.observation.total == 4 and result.reward == 4.0


def test_a_manifest_pointing_nowhere_is_a_clear_error(tmp_path):
    pkg = make_env_package(tmp_path)
    (pkg / "server" / "app.py").unlink()
    (pkg / "openenv.yaml").write_text("name: broken\napp: server.main:app\n")
    with pytest.raises(TargetError, match="server.main:app"):
        resolve(str(pkg))
    (pkg / "openenv.yaml").write_text("[unclosed")
    with pytest.raises(TargetError, match="not a valid manifest"):
        resolve(str(pkg))


def test_an_installed_env_package(tmp_path, monkeypatch):
    site = tmp_path / "site"
    make_env_package(site)
    dist = site / "openenv_count_env-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: openenv-count_env\nVersion: 0.1.0\n")
    monkeypatch.syspath_prepend(str(site))
    found = resolve("count")
    assert found.kind == "package" and found.app == "count_env.server.app:app" and found.package == "count_env"
    assert AutoAction.from_env("count-env").__name__ == "CountAction"
    with running_server(load_app("count")) as url:
        env = AutoEnv.from_env("count", base_url=url)  # a running server, the package's typed client
        assert type(env).__name__ == "CountEnv"
        with env:
            env.reset()
            assert env.step(AutoAction.from_env("count")(n=2)).observation.total == 2


def test_module_app_and_urls(echo_url):
    found = resolve("openenv.envs.echo.app:app")
    assert found.kind == "module" and found.app == "openenv.envs.echo.app:app"
    url_env = AutoEnv.from_env(echo_url)
    assert isinstance(url_env, GenericEnvClient) and resolve(echo_url) == EnvTarget("url", echo_url, echo_url,
                                                                                    url=echo_url)  # fmt: skip
    with url_env:
        assert url_env.reset().observation["echoed_message"]
    with AutoEnv.from_env("echo", base_url=echo_url) as typed:
        assert isinstance(typed, EchoEnv) and typed.reset().observation.echoed_message
    with pytest.raises(TargetError, match="carries no action class"):
        AutoAction.from_env(echo_url)


def test_env_client_from_env_is_a_handle_for_await_and_sync(echo_url):
    with EchoEnv.from_env("echo", base_url=echo_url).sync() as env:
        env.reset()
        assert env.step(EchoAction(message="h")).reward == pytest.approx(0.1)

    async def main():
        env = await EnvClient.from_env(echo_url)  # abstract base: the env's typed client or a generic one
        async with env:
            await env.reset()
            return type(env)

    assert asyncio.run(main()) is GenericEnvClient


def test_a_local_openenv_image(echo_image, docker_engine):  # noqa: F811
    found = resolve(echo_image)
    assert found.kind == "image" and found.image == echo_image
    env = AutoEnv.from_env(echo_image, wait_timeout=90)
    with env:
        env.reset()
        assert env.step({"message": "img"}).observation["echoed_message"] == "img"
    assert env._provider is None  # the container was stopped with the client

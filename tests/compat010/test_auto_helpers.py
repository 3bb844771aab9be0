"""AutoEnv/AutoAction helpers (0.10's names and dict shapes): ours on env directories and bundled
envs, differential against the published 0.10 on the same directory. ``from_hub`` is tested only
where it needs no network (the hub cannot be reached here)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from openenv.auto import AutoAction, AutoEnv
from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.errors import HubUnavailableError, TargetError
from openenv.core.generic_client import GenericAction, GenericEnvClient
from tests.peer010 import PEERS010, peer010_python, run_with

TYPED = {
    "__init__.py": "",
    "openenv.yaml": "spec_version: 1\nname: weather_env\ndescription: Weather environment\n",
    "models.py": """
        from openenv.core.env_server.types import Action, Observation
        class WeatherAction(Action):
            city: str
        class WeatherObservation(Observation):
            forecast: str = ""
    """,
    "client.py": """
        from openenv.core.env_client import EnvClient
        from openenv.core.client_types import StepResult
        from .models import WeatherAction, WeatherObservation
        class WeatherEnv(EnvClient):
            def _step_payload(self, action): return action.model_dump()
            def _parse_result(self, payload): return StepResult(observation=WeatherObservation(**payload["observation"]))
            def _parse_state(self, payload): return payload
    """,
    "server/__init__.py": "",
    "server/app.py": "app = None  # not imported by the helpers\n",
}
MCP = {
    "__init__.py": "",
    "openenv.yaml": "spec_version: 1\nname: tools_env\n",
    "client.py": """
        from openenv.core.mcp_client import MCPToolClient
        class ToolsEnv(MCPToolClient):
            pass
    """,
    "server/__init__.py": "",
    "server/app.py": "# builds an MCPEnvironment from a FastMCP server (not imported by the helpers)\napp = None\n",
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


@pytest.fixture
def typed_dir(tmp_path: Path) -> Path:
    return _write(tmp_path / "weather_env", TYPED)


@pytest.fixture
def mcp_dir(tmp_path: Path) -> Path:
    return _write(tmp_path / "tools_env", MCP)


def test_env_info_has_010s_keys(typed_dir):
    info = AutoEnv.get_env_info(str(typed_dir))
    assert info == {"env_key": "weather", "name": "weather_env", "package": "openenv-weather_env",
                    "version": "0.0.0", "description": "Weather environment", "env_class": "WeatherEnv",
                    "action_class": "WeatherAction", "observation_class": "WeatherObservation",
                    "module": "weather_env.client", "default_image": "weather-env:latest", "spec_version": 1}  # fmt: skip
    action = AutoAction.get_action_info(str(typed_dir))
    assert set(action) == {"env_key", "env_name", "package", "action_class", "observation_class", "module"}
    assert AutoEnv.get_env_class(str(typed_dir)).__name__ == "WeatherEnv"
    assert AutoAction.from_env(str(typed_dir)).__name__ == "WeatherAction"
    assert AutoAction.from_hub(str(typed_dir)).__name__ == "WeatherAction"


def test_same_as_published_010_on_the_same_directory(typed_dir):
    python = peer010_python()
    done = run_with(python, PEERS010 / "auto" / "info_probe.py", str(typed_dir.parent), "weather_env")
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    ours = AutoEnv.get_env_info(str(typed_dir))
    # version: 0.10 reads the installed distribution's; a bare directory has none here
    assert {k: v for k, v in ours.items() if k != "version"} == {k: v for k, v in theirs["env_info"].items() if k != "version"}
    assert AutoAction.get_action_info(str(typed_dir)) == theirs["action_info"]
    assert AutoAction.from_env(str(typed_dir)).__name__ == theirs["action_class"]
    assert AutoEnv.get_env_class(str(typed_dir)).__name__ == theirs["env_class"]


def test_mcp_env_directory_gives_call_tool_action(mcp_dir):
    assert AutoAction.from_env(str(mcp_dir)) is CallToolAction
    assert AutoEnv.get_env_class(str(mcp_dir)).__name__ == "ToolsEnv"


def test_mcp_env_on_published_010_has_no_action_class(mcp_dir):
    """Deliberate difference (docs/openenv-0.10.md): 0.10 looks for ``ToolsAction`` and fails."""
    done = run_with(peer010_python(), PEERS010 / "auto" / "info_probe.py", str(mcp_dir.parent), "tools_env")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["action_class"].startswith("ImportError")


def test_bundled_listing_and_lookups(capsys):
    AutoEnv.list_environments()
    out = capsys.readouterr().out
    assert out.startswith("Available OpenEnv Environments:") and "  echo " in out and "Total: " in out
    AutoAction.list_actions()
    out = capsys.readouterr().out
    assert "Available Action Classes:" in out and "EchoAction" in out
    assert AutoEnv.get_env_info("echo-env")["env_class"] == "EchoEnv"
    assert AutoAction.from_env("echo", skip_install=True) is GenericAction


def test_unknown_names_and_the_hub():
    with pytest.raises(ValueError):  # 0.10 raises ValueError too; ours is a TargetError (a ValueError)
        AutoEnv.get_env_info("no_such_env_here")
    with pytest.raises(TargetError):
        AutoAction.get_action_info("no_such_env_here")
    with pytest.raises(HubUnavailableError):  # no network here: said plainly, nothing installed
        AutoEnv.from_hub("someone/some_env")
    client = AutoEnv.from_hub("someone/some_env", base_url="http://127.0.0.1:9", skip_install=True)
    assert isinstance(client, GenericEnvClient)


def test_module_path_matches_010():
    import openenv.auto.auto_action as mod

    assert mod.AutoAction is AutoAction
    from openenv.auto.auto_env import AutoAction as again

    assert again is AutoAction

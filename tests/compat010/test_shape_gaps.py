"""0.10's small shapes: ``"metadata"`` on HTTP reset/step, /metadata defaults, OpenAPI version and
``/mcp``, ``run_async_safely``, and the provider names (``UVProvider`` really runs ``uv run``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import textwrap
from pathlib import Path

import httpx
import pytest

from tests._require import require
from tests.peer010 import PEERS010, peer010_python, serving_ours, serving_published

ENVS = PEERS010 / "envs"


def _peer_validate(url: str) -> dict:
    """0.10's own ``openenv validate --url URL --json`` (in its venv), parsed."""
    proc = subprocess.run(
        [peer010_python(), "-P", "-m", "openenv.cli", "validate", "--url", url, "--json"],
        capture_output=True, text=True, timeout=120, cwd="/",
    )
    return json.loads(proc.stdout)


@pytest.mark.parametrize("module", ["generic_env.py", "mcp_echo_env.py"])
def test_http_bodies_and_metadata_match_010(module: str) -> None:
    seen = {}
    for side, serving in (("ours", serving_ours), ("0.10", serving_published)):
        with serving(ENVS / module) as url:
            reset = httpx.post(f"{url}/reset", json={}, timeout=30).json()
            meta = httpx.get(f"{url}/metadata", timeout=30).json()
            seen[side] = (sorted(reset), reset.get("metadata", "absent"), meta["name"], meta["description"],
                          meta["version"])
    assert seen["ours"] == seen["0.10"]
    assert "metadata" in seen["ours"][0]


def test_010_validator_sees_our_profile_and_mcp_route() -> None:
    with serving_ours(ENVS / "mcp_echo_env.py") as url:
        report = _peer_validate(url)
        paths = httpx.get(f"{url}/openapi.json", timeout=30).json()["paths"]
    assert report["standard_profile"] == "openenv-http/1.x", report["standard_version"]
    assert report["passed"] is True, report["summary"]
    assert "post" in paths["/mcp"]


def test_run_async_safely_outside_and_inside_a_loop() -> None:
    from openenv.core.utils import run_async_safely

    async def value(x: int) -> int:
        await asyncio.sleep(0)
        return x * 2

    async def boom() -> None:
        raise KeyError("k")

    assert run_async_safely(value(2)) == 4

    async def inside() -> int:
        return run_async_safely(value(5))  # a loop is running here: asyncio.run would refuse

    assert asyncio.run(inside()) == 10
    with pytest.raises(KeyError):
        asyncio.run(_raise_inside(run_async_safely, boom))


async def _raise_inside(run, make):  # noqa: ANN001
    return run(make())


def test_provider_names_import_at_010_paths() -> None:
    from openenv.core.containers.runtime import KubernetesProvider, RuntimeProvider, UVProvider
    from openenv.core.containers.runtime.errors import EngineUnavailableError
    from openenv.core.containers.runtime.providers import KubernetesProvider as K2
    from openenv.core.containers.runtime.providers import RuntimeProvider as R2
    from openenv.core.containers.runtime.uv_provider import UVProvider as U2

    assert (K2, R2, U2) == (KubernetesProvider, RuntimeProvider, UVProvider)
    assert issubclass(UVProvider, RuntimeProvider)
    with pytest.raises(EngineUnavailableError, match="no Kubernetes backend.*kubeconfig"):
        KubernetesProvider().start_container("echo")


def _uv_available() -> bool:
    from openenv.core.containers.runtime.errors import EngineUnavailableError
    from openenv.core.containers.runtime.uv_provider import find_uv

    try:
        find_uv()
    except EngineUnavailableError:
        return False
    return True


def test_uv_provider_serves_a_uv_project(tmp_path: Path) -> None:
    """A real ``uv run --isolated --project``: uv builds the project's venv and serves its app."""
    require(_uv_available(), "uv (pip install uv)")
    from openenv.core.containers.runtime import UVProvider
    from openenv.core.containers.runtime.errors import StartupError

    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "uv-probe-env"
        version = "0.0.1"
        requires-python = ">=3.10"
        dependencies = ["starlette", "uvicorn"]
    """))
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "__init__.py").write_text("")
    (tmp_path / "server" / "app.py").write_text(textwrap.dedent("""\
        import os, sys
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        def health(request):
            return JSONResponse({"status": "healthy", "python": sys.prefix, "tag": os.environ.get("PROBE_TAG")})

        app = Starlette(routes=[Route("/health", health)])
    """))
    with UVProvider(project_path=str(tmp_path), host="127.0.0.1", env_vars={"PROBE_TAG": "t1"}) as provider:
        try:
            provider.wait_for_ready(timeout_s=120)
        except StartupError as exc:  # the index unreachable: uv cannot build the venv here
            require(False, f"uv could not build the project's venv: {exc}")
        body = httpx.get(provider.base_url + "/health", timeout=10).json()
        assert body["tag"] == "t1"
        assert body["python"] != str(Path(__import__("sys").prefix))  # its own isolated venv
        with pytest.raises(RuntimeError, match="already running"):
            provider.start()
    with pytest.raises(RuntimeError, match="not been started"):
        _ = provider.base_url

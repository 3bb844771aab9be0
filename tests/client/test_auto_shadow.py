"""An installed env package whose name is also a bundled env's (an ``echo_env`` package beside our
bundled ``echo``): the package wins for every spelling of the name, the bundled one stays reachable
as ``openenv.envs.echo``, listings show both once, and the client core imports no resolver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from openenv.auto import AutoAction, AutoEnv, TargetError, env_names, load_app, resolve
from openenv.envs.echo import EchoAction
from tests.client.test_auto import make_env_package
from tests.server_utils import running_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def echo_env_installed(tmp_path, monkeypatch) -> Path:
    """A distribution ``openenv-echo_env`` (module ``echo_env``: the count env) on ``sys.path``."""
    site = tmp_path / "site"
    make_env_package(site, module="echo_env")
    dist = site / "openenv_echo_env-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: openenv-echo_env\nVersion: 0.1.0\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def test_the_installed_package_wins_and_the_bundled_one_has_its_own_name(echo_env_installed):
    for name in ("echo", "echo-env", "echo_env"):
        found = resolve(name, docker=False)
        assert found.kind == "package" and found.package == "echo_env", name
    bundled = resolve("openenv.envs.echo", docker=False)
    assert bundled.kind == "bundled" and bundled.app == "openenv.envs.echo.app:app"
    assert AutoAction.from_env("echo").__name__ == "CountAction"
    assert AutoAction.from_env("openenv.envs.echo") is EchoAction


def test_from_env_with_base_url_picks_the_packages_client(echo_env_installed):
    with running_server(load_app("echo")) as url:
        env = AutoEnv.from_env("echo", base_url=url)
        assert type(env).__name__ == "CountEnv"
        with env:
            env.reset()
            assert env.step(AutoAction.from_env("echo")(n=3)).observation.total == 3


def test_listings_show_both_once(echo_env_installed, capsys):
    assert env_names() == ["echo", "openenv.envs.echo", "repl", "toolbox"]
    AutoEnv.list_environments()
    out = capsys.readouterr().out
    assert out.count("  echo ") == 1 and out.count("openenv.envs.echo") == 1
    assert "Package: openenv-echo_env" in out and "Total: 4 environments" in out
    with pytest.raises(TargetError) as info:
        resolve("nope", docker=False)
    assert "use an env name (echo, openenv.envs.echo, repl, toolbox)" in str(info.value)


def test_without_a_package_the_bundled_env_keeps_its_short_name():
    assert resolve("echo", docker=False).kind == "bundled"
    assert resolve("openenv.envs.echo", docker=False).kind == "bundled"
    assert "openenv.envs.echo" not in env_names()


def test_the_client_core_imports_no_resolver():
    code = ("import sys, openenv.core, openenv.core.env_client, openenv.core.client_provider, "
            "openenv.core.client_factories, openenv.core.generic_client, openenv.core.sync_client; "
            "print(sorted(m for m in sys.modules if m.startswith('openenv.auto')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
    # and no module of the client core names the resolver, but ``from_env``'s one call site
    for module in ("env_client", "client_factories", "sync_client", "generic_client", "client_handles"):
        assert "openenv.auto" not in (ROOT / "openenv" / "core" / f"{module}.py").read_text(), module
    provider = (ROOT / "openenv" / "core" / "client_provider.py").read_text()
    assert provider.count("from openenv.auto") == 1

"""``openenv import``: 0.10's arguments and errors; the package it writes validates and serves on ours."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.core import GenericEnvClient
from tests.importers.helpers import ROOT, SOURCES, cli, need, serving


def _import(source: str, out: Path, name: str, *extra: str) -> Path:
    done = cli("import", str(SOURCES / source), "--name", name, "--output-dir", str(out), *extra)
    assert done.returncode == 0, done.stderr
    assert f"Environment created at: {out / name}" in done.stdout
    return out / name


def _own_tests(pkg: Path) -> subprocess.CompletedProcess[str]:
    """The generated package's own tests, run from inside it with our openenv importable."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=str(pkg),
                          capture_output=True, text=True, timeout=180, env=env)  # fmt: skip


def test_generated_layout(tmp_path: Path) -> None:
    pkg = _import("vf_single", tmp_path, "doubling")
    for rel in ("openenv.yaml", "pyproject.toml", "__init__.py", "client.py", "models.py", "server/app.py",
                "server/doubling_environment.py", "server/requirements.txt", "vendor/vf_single/vf_single.py"):
        assert (pkg / rel).is_file(), rel
    assert "app: server.app:app" in (pkg / "openenv.yaml").read_text()
    assert "verifiers>=0.1.14" in (pkg / "server" / "requirements.txt").read_text()
    assert '"doubling.vendor.vf_single.vf_single"' in (pkg / "server" / "doubling_environment.py").read_text()
    assert "class DoublingEnv(MCPToolClient)" in (pkg / "client.py").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["--name", "9lives"], "is not a valid Python identifier"),
    (["--name", "bad-name"], "is not a valid Python identifier"),
    (["--name", "ok", "--type", "gym"], "Unsupported source type 'gym'"),
    (["--name", "ok", "--env-class", "Nope"], "No detected environment matched 'Nope'"),
])  # fmt: skip
def test_bad_arguments_are_clear(tmp_path: Path, args: list[str], message: str) -> None:
    done = cli("import", str(SOURCES / "vf_single"), "--output-dir", str(tmp_path), *args)
    assert done.returncode != 0
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "ok").exists()


def test_source_that_fails_detection(tmp_path: Path) -> None:
    done = cli("import", str(SOURCES / "not_an_env"), "--name", "nothing", "--output-dir", str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "No supported environment found" in done.stderr and "load_environment()" in done.stderr
    assert not (tmp_path / "nothing").exists()


def test_refuses_non_empty_output_and_output_inside_source(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("x")
    done = cli("import", str(SOURCES / "vf_single"), "--name", "taken", "--output-dir", str(tmp_path))
    assert done.returncode == 2 and "already exists and is not empty" in done.stderr
    missing = cli("import", str(tmp_path / "nope"), "--name", "a", "--output-dir", str(tmp_path))
    assert missing.returncode == 2 and "Source must be an existing directory" in missing.stderr
    src = tmp_path / "src"
    (src).mkdir()
    (src / "m.py").write_text("import verifiers\ndef load_environment():\n    pass\n")
    inside = cli("import", str(src), "--name", "a", "--output-dir", str(src / "out"))
    assert inside.returncode == 2 and "must not be inside the source tree" in inside.stderr


def test_generated_verifiers_package_validates_and_serves(tmp_path: Path) -> None:
    need("verifiers")
    pkg = _import("vf_single", tmp_path, "doubling")
    checked = cli("validate", str(pkg), timeout=240)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    own = _own_tests(pkg)
    assert own.returncode == 0 and "1 passed" in own.stdout, own.stdout + own.stderr
    with serving(str(pkg)) as url, GenericEnvClient(base_url=url).sync() as env:
        tools = env.step({"type": "list_tools"}).observation["tools"]
        assert [t["name"] for t in tools] == ["submit"]
        first = env.reset(split="train", index=2)
        assert first.observation["metadata"]["prompt"][-1]["content"] == "What is 2 + 2?"
        result = env.step({"type": "call_tool", "tool_name": "submit", "arguments": {"completion": "4"}})
        assert result.done and result.reward == pytest.approx(1.5)
        metrics = result.observation["metadata"]["metrics"]
        assert (metrics["exact"], metrics["short"]) == (1.0, 1.0)
        env.reset(split="train", index=2)
        wrong = env.step({"type": "call_tool", "tool_name": "submit", "arguments": {"completion": "five!"}})
        metrics = wrong.observation["metadata"]["metrics"]
        assert wrong.reward == 0.0 and (metrics["exact"], metrics["short"]) == (0.0, 0.0)


def test_generated_ors_package_serves(tmp_path: Path) -> None:
    need("openreward")
    pkg = _import("ors_quiz", tmp_path, "capitals", "--type", "ors")
    assert "openreward" in (pkg / "pyproject.toml").read_text()
    own = _own_tests(pkg)
    assert own.returncode == 0 and "1 passed" in own.stdout, own.stdout + own.stderr
    with serving(str(pkg)) as url, GenericEnvClient(base_url=url).sync() as env:
        first = env.reset(split="train", index=1)
        assert first.observation["metadata"]["prompt"][0]["text"] == "What is the capital of Japan?"
        tools = env.step({"type": "list_tools"}).observation["tools"]
        assert [t["name"] for t in tools] == ["submit"]
        result = env.step({"type": "call_tool", "tool_name": "submit", "arguments": {"city": "Tokyo"}})
        assert result.done and result.reward == 1.0
        assert result.observation["metadata"]["exact"] == 1.0

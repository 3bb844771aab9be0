"""Our package beside env packages written for the published 0.10, in every install order.

Env packages of the OpenEnv catalogue depend on ``openenv[core]``. Our distribution is named
``openenv`` too (a local version, ``0.10.0+studio.N``), so pip treats it as that requirement met:
installing such an env after ours keeps ours, and installing ours after the published 0.10
replaces it cleanly (pip uninstalls the other distribution of the same name first). Real pip, real
venvs, the published 0.10 wheel from PyPI, our wheel built from this tree.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from openenv.core.containers.wheelhouse import build_project_wheel
from tests._require import require

pytestmark = pytest.mark.timeout(900)

ENV_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "openenv-catalogue-like-env"
version = "0.1.0"
dependencies = ["openenv[core]>=0.2.2"]

[tool.setuptools]
packages = ["catalogue_like_env"]
"""


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_project_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def env_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("catalogue-env")
    (root / "pyproject.toml").write_text(ENV_PYPROJECT)
    (root / "catalogue_like_env").mkdir()
    (root / "catalogue_like_env" / "__init__.py").write_text(
        "from openenv.core.env_server import Environment  # what a catalogue env imports\n")
    return root


def _venv(path: Path) -> Path:
    _run(sys.executable, "-m", "venv", str(path))
    pip = path / "bin" / "pip"
    _run(str(pip), "install", "-q", "--disable-pip-version-check", "--upgrade", "pip")
    return pip


def _ours_intact(venv: Path, wheel: Path) -> None:
    py, version = str(venv / "bin" / "python"), wheel.name.split("-")[1].replace("_", "+")
    shown = _run(py, "-m", "pip", "show", "openenv").stdout
    assert f"Version: {version}" in shown, shown
    _run(py, "-c", "from openenv.core import VectorEnvClient; import openenv.capture, webui.studio.app")
    assert "studio" in _run(str(venv / "bin" / "openenv"), "--help").stdout  # our CLI, not 0.10's
    check = _run(py, "-m", "pip", "check", check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def _pypi_reachable() -> bool:
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", "/tmp/openenv-pypi-probe",
                           "openenv==0.10.0"], capture_output=True, timeout=300)
    return done.returncode == 0


def test_an_env_package_installed_after_ours_keeps_ours(tmp_path: Path, wheel: Path, env_package: Path) -> None:
    pip = _venv(tmp_path / "venv")
    _run(str(pip), "install", "-q", "--disable-pip-version-check", str(wheel))
    _run(str(pip), "install", "-q", "--disable-pip-version-check", str(env_package))
    _ours_intact(tmp_path / "venv", wheel)
    _run(str(tmp_path / "venv" / "bin" / "python"), "-c", "import catalogue_like_env")


def test_ours_installed_after_the_published_one_replaces_it(tmp_path: Path, wheel: Path, env_package: Path) -> None:
    require(_pypi_reachable(), "PyPI (the published openenv 0.10.0 wheel)")
    pip = _venv(tmp_path / "venv")
    _run(str(pip), "install", "-q", "--disable-pip-version-check", "--no-deps", "openenv==0.10.0")
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    only_010 = site / "openenv" / "cli" / "commands" / "harbor.py"  # a module of 0.10's that ours does not have
    assert only_010.is_file()  # 0.10's own layout, present before
    _run(str(pip), "install", "-q", "--disable-pip-version-check", str(wheel), str(env_package))
    _ours_intact(tmp_path / "venv", wheel)
    assert not only_010.exists()  # 0.10's files went with its distribution


def test_uv_pip_keeps_ours_too(tmp_path: Path, wheel: Path, env_package: Path) -> None:
    require(_pypi_reachable(), "PyPI (uv)")
    pip = _venv(tmp_path / "venv")
    _run(str(pip), "install", "-q", "--disable-pip-version-check", "uv")
    uv, py = str(tmp_path / "venv" / "bin" / "uv"), str(tmp_path / "venv" / "bin" / "python")
    _run(uv, "pip", "install", "-q", "--python", py, str(wheel))
    _run(uv, "pip", "install", "-q", "--python", py, str(env_package))
    _ours_intact(tmp_path / "venv", wheel)

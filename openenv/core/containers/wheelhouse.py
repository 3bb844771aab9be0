"""Host-built wheelhouse, so an env image can be built with no index reachable from the build.

The project's own wheel is built from the source tree; its dependencies are downloaded as binary
wheels for the image's interpreter (CPython 3.11, manylinux x86_64, matching the Debian bookworm
base) and cached by the dependency list, so repeated builds do not touch the index.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .runtime.errors import ProviderError

__all__ = [
    "ImageBuildError",
    "WheelTarget",
    "build_project_wheel",
    "build_requirements",
    "download_dependencies",
    "project_root",
]

MANYLINUX = (
    "manylinux_2_36",
    "manylinux_2_34",
    "manylinux_2_31",
    "manylinux_2_28",
    "manylinux_2_17",
    "manylinux2014",
)


class ImageBuildError(ProviderError):
    """An env image (or its wheelhouse) could not be built; ``log_tail`` holds the tool's output."""

    code = "IMAGE_BUILD_FAILED"


class WheelTarget:
    """The interpreter the wheels are for (default: the bookworm base image's CPython 3.11)."""

    def __init__(self, python_version: str = "3.11", arch: str = "x86_64") -> None:
        self.python_version = python_version
        self.arch = arch

    def pip_args(self) -> list[str]:
        nodot = self.python_version.replace(".", "")
        args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", self.python_version]
        args += ["--abi", f"cp{nodot}", "--abi", "abi3", "--abi", "none"]
        for tag in MANYLINUX:
            args += ["--platform", f"{tag}_{self.arch}"]
        return args


def project_root() -> Path | None:
    """The source tree this package runs from, if it is a checkout (has ``pyproject.toml``)."""
    root = Path(__file__).resolve().parents[3]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and (root / "webui").is_dir() and 'name = "openenv"' in pyproject.read_text():
        return root
    return None


def _pip(args: list[str], what: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise ImageBuildError(f"{what} failed (pip exit {done.returncode})", log_tail=tail)


def build_project_wheel(dest: Path, root: Path | None = None) -> Path:
    """Build this project's wheel from its source tree into ``dest``; return the wheel's path."""
    root = root or project_root()
    if root is None:
        raise ImageBuildError("no OpenEnv Studio source tree to build the openenv wheel from")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="openenv-wheel-") as tmp:
        _pip(["wheel", "--no-deps", "-w", tmp, str(root)], "building the project wheel")
        (built,) = Path(tmp).glob("*.whl")
        target = dest / built.name
        shutil.move(str(built), target)
    return target


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        lines = zf.read(meta).decode().splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]


def build_requirements(project: Path) -> list[str]:
    """``[build-system] requires`` of a project directory's ``pyproject.toml`` (``[]`` if none)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    file = project / "pyproject.toml"
    if not file.is_file():
        return []
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ImageBuildError(f"{file}: not valid TOML: {exc}") from None
    requires = data.get("build-system", {}).get("requires", ["setuptools>=40.8.0"])
    return [str(r) for r in requires] if isinstance(requires, list) else []


def download_dependencies(
    dest: Path, wheel: Path, *, cache_dir: Path, target: WheelTarget | None = None, extra: list[str] | None = None
) -> None:
    """Put binary wheels of ``wheel``'s runtime dependencies (and ``extra`` requirements, e.g. an env
    package's build backend, cached apart) into ``dest`` (cached in ``cache_dir``)."""
    target = target or WheelTarget()
    groups = [sorted(r for r in _requirements(wheel) if "extra ==" not in r)]
    if extra:
        groups.append(sorted(set(extra)))
    dest.mkdir(parents=True, exist_ok=True)
    for reqs in groups:
        for whl in _cached_download(reqs, target, cache_dir).glob("*.whl"):
            shutil.copy2(whl, dest / whl.name)


def _cached_download(reqs: list[str], target: WheelTarget, cache_dir: Path) -> Path:
    key = hashlib.sha256("\n".join([*reqs, *target.pip_args()]).encode()).hexdigest()[:16]
    cached = cache_dir / key
    if not (cached / ".complete").exists():
        staging = cache_dir / f"{key}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        _pip(["download", "-d", str(staging), *target.pip_args(), *reqs], "downloading dependency wheels")
        (staging / ".complete").touch()
        shutil.rmtree(cached, ignore_errors=True)
        staging.rename(cached)
    return cached

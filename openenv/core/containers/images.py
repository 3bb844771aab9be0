"""Build an environment's image from ``docker/Dockerfile``, cached by a content hash.

    tag = build_env_image("echo", base_image="openenv-base:bookworm", offline=True)

The build context is staged in a temporary directory: the Dockerfile, ``wheels/`` (this project's
wheel, plus every dependency when ``offline``) and ``env/`` (a user's env directory, or empty).
The image carries the hash of that context in a label; a rebuild with the same hash is skipped.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import docker.errors

from .runtime.docker_engine import engine_client, translate_docker_errors
from .wheelhouse import (
    ImageBuildError,
    build_project_wheel,
    build_requirements,
    download_dependencies,
    project_root,
)

__all__ = ["DEFAULT_BASE_IMAGE", "ImageBuildError", "build_env_image", "dockerfile_path"]

DEFAULT_BASE_IMAGE = "python:3.11-slim"
HASH_LABEL = "io.openenv.build-hash"
_IGNORED = {"__pycache__", ".venv", ".git", ".pytest_cache", ".ruff_cache"}


def dockerfile_path() -> Path:
    """The env Dockerfile: ``docker/Dockerfile`` of a checkout, or the copy shipped in the package."""
    for candidate in (
        Path(__file__).resolve().parents[3] / "docker" / "Dockerfile",
        Path(__file__).with_name("docker") / "Dockerfile",
    ):
        if candidate.is_file():
            return candidate
    raise ImageBuildError("the env Dockerfile is missing from this installation")


def _env_source(env: str) -> tuple[str, Path | None]:
    """(image name part, user env directory or None for a bundled env)."""
    path = Path(env)
    if path.is_dir():  # 0.10's default tag: openenv-<directory name without _env>
        return path.resolve().name.lower().removesuffix("_env"), path.resolve()
    if not env.isidentifier() or importlib.util.find_spec(f"openenv.envs.{env}") is None:
        raise ImageBuildError(f"{env!r} is neither a bundled env nor an env directory")
    return env, None


def _context_hash(ctx: Path, buildargs: dict[str, str], base_id: str) -> str:
    """Hash of what the image is made of; a wheel counts by its members (its zip bytes vary)."""
    digest = hashlib.sha256(json.dumps([buildargs, base_id], sort_keys=True).encode())
    for path in sorted(p for p in ctx.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(ctx)).encode() + b"\0")
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as wheel:
                for member in sorted(wheel.namelist()):
                    digest.update(member.encode() + b"\0" + wheel.read(member) + b"\0")
        else:
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _stage(ctx: Path, env_dir: Path | None, offline: bool, cache_dir: Path) -> dict[str, str]:
    """Fill the build context; return the build args it needs."""
    shutil.copy2(dockerfile_path(), ctx / "Dockerfile")
    wheels = ctx / "wheels"
    wheels.mkdir()
    (wheels / ".keep").touch()
    args: dict[str, str] = {}
    if project_root() is not None:
        wheel = build_project_wheel(wheels)
        if offline:
            extra = build_requirements(env_dir) if env_dir is not None else []  # a pyproject env's backend
            download_dependencies(wheels, wheel, cache_dir=cache_dir, extra=extra)
            args["PIP_ARGS"] = "--no-index"
    elif offline:
        raise ImageBuildError("an offline build needs the OpenEnv Studio source tree")
    else:
        args["OPENENV_PACKAGE"] = f"openenv=={metadata.version('openenv')}"
    if env_dir is None:
        (ctx / "env").mkdir()
        (ctx / "env" / ".keep").touch()
    else:
        shutil.copytree(env_dir, ctx / "env", ignore=lambda _d, names: [n for n in names if n in _IGNORED])
    return args


def build_env_image(
    env: str,
    *,
    tag: str | None = None,
    base_image: str | None = None,
    offline: bool = False,
    docker_host: str | None = None,
    cache_dir: str | Path | None = None,
    force: bool = False,
    on_log: Callable[[str], None] | None = None,
    dockerfile: str | Path | None = None,
    context: str | Path | None = None,
    build_args: dict[str, str] | None = None,
    no_cache: bool = False,
) -> str:
    """Build the image for ``env`` (bundled name or env directory); return its tag.

    Args:
        tag: image tag (default ``openenv-<env>:latest``; a directory ``my_env`` gives ``openenv-my``).
        base_image: ``BASE_IMAGE`` build arg (default ``python:3.11-slim``).
        offline: install everything from a host-built wheelhouse (``pip --no-index``).
        force: rebuild even if an image with the same content hash exists.
        on_log: called with each line of build output.
        dockerfile, context: build the env's own Dockerfile (default ``<context>/Dockerfile`` or
            ``<context>/server/Dockerfile``) in ``context`` (default the env directory) as it is,
            instead of the shared Dockerfile over a staged context.
        build_args: extra ``--build-arg`` values (they win over ours).
        no_cache: build without Docker's layer cache (and always rebuild).

    Raises:
        ImageBuildError: the env is unknown or the build failed (with the build log tail).
        EngineUnavailableError: Docker is not reachable.
    """
    name, env_dir = _env_source(env)
    tag = tag or f"openenv-{name}:latest"
    if dockerfile is not None or context is not None:
        return _build_own_dockerfile(env_dir, tag, dockerfile, context, base_image, build_args or {}, no_cache,
                                     docker_host, on_log)
    base_image = base_image or DEFAULT_BASE_IMAGE
    client = engine_client(docker_host, timeout=600)
    cache = Path(cache_dir) if cache_dir else Path.home() / ".cache" / "openenv" / "wheelhouse"
    try:
        with translate_docker_errors("looking up the base image"):
            try:
                base_id = client.images.get(base_image).id
            except docker.errors.ImageNotFound:
                base_id = base_image
        with tempfile.TemporaryDirectory(prefix="openenv-build-") as tmp:
            ctx = Path(tmp)
            buildargs = {"BASE_IMAGE": base_image, "OPENENV_ENV": "/app/env" if env_dir else name}
            buildargs.update(_stage(ctx, env_dir, offline, cache))
            buildargs.update(build_args or {})
            content_hash = _context_hash(ctx, buildargs, base_id)
            previous = _image_labels(client, tag)
            if force or no_cache or previous is None or previous[1].get(HASH_LABEL) != content_hash:
                _run_build(client, ctx, tag, buildargs, {HASH_LABEL: content_hash}, on_log, no_cache=no_cache)
                if previous is not None:
                    _drop_replaced(client, previous[0])
    finally:
        client.close()
    return tag


def _build_own_dockerfile(
    env_dir: Path | None,
    tag: str,
    dockerfile: str | Path | None,
    context: str | Path | None,
    base_image: str | None,
    build_args: dict[str, str],
    no_cache: bool,
    docker_host: str | None,
    on_log: Callable[[str], None] | None,
) -> str:
    """``docker build -f DOCKERFILE CONTEXT`` as 0.10's ``openenv build -f/-c`` runs it: nothing staged."""
    ctx = Path(context) if context is not None else env_dir
    if ctx is None or not ctx.is_dir():
        raise ImageBuildError(f"build context {ctx or context!r} is not a directory")
    if dockerfile is None:
        dockerfile = next((c for c in (ctx / "Dockerfile", ctx / "server" / "Dockerfile") if c.is_file()), None)
        if dockerfile is None:
            raise ImageBuildError(f"Dockerfile not found at {ctx / 'Dockerfile'} or {ctx / 'server' / 'Dockerfile'}")
    file = Path(dockerfile).resolve()
    if not file.is_file():
        raise ImageBuildError(f"Dockerfile not found at {dockerfile}")
    buildargs = ({"BASE_IMAGE": base_image} if base_image else {}) | build_args
    client = engine_client(docker_host, timeout=600)
    try:
        _run_build(client, ctx.resolve(), tag, buildargs, {}, on_log, no_cache=no_cache, dockerfile=str(file))
    finally:
        client.close()
    return tag


def _image_labels(client: docker.DockerClient, tag: str) -> tuple[str, dict[str, str]] | None:
    """(id, labels) of the image now tagged ``tag``, or None."""
    with translate_docker_errors("looking up the env image"):
        try:
            image = client.images.get(tag)
        except docker.errors.ImageNotFound:
            return None
    return image.id, image.labels or {}


def _drop_replaced(client: docker.DockerClient, image_id: str) -> None:
    """Remove the image a rebuild replaced, unless it is still tagged or used by a container."""
    try:
        if not client.images.get(image_id).tags:
            client.images.remove(image_id)
    except docker.errors.APIError as exc:
        if exc.status_code not in (404, 409):  # gone already, or still in use: keep it
            raise ImageBuildError(f"removing the replaced image {image_id}: {exc.explanation}") from exc


def _run_build(
    client: docker.DockerClient,
    ctx: Path,
    tag: str,
    buildargs: dict[str, str],
    labels: dict[str, str],
    on_log: Callable[[str], None] | None,
    *,
    no_cache: bool = False,
    dockerfile: str | None = None,
) -> None:
    lines: list[str] = []
    with translate_docker_errors(f"building {tag}"):
        stream = client.api.build(
            path=str(ctx), tag=tag, buildargs=buildargs, labels=labels, rm=True, forcerm=True, decode=True,
            nocache=no_cache, dockerfile=dockerfile,
        )
        for chunk in stream:
            text = chunk.get("stream") or chunk.get("status") or ""
            for line in text.splitlines():
                lines.append(line)
                if on_log is not None:
                    on_log(line)
            if "error" in chunk:
                raise ImageBuildError(
                    f"building {tag} failed: {chunk['error'].strip()}", log_tail="\n".join(lines[-40:])
                )

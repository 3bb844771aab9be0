"""``openenv push``: deploy an env directory to a Hugging Face Space (the hub's API through
``huggingface_hub``) or, with ``--registry``, build its image and push it to a Docker registry."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click

from openenv.cli.hub import HubError, call_hub, hub_endpoint, hub_user, need_hub, parse_pairs

try:  # the `hub` extra; `push --registry` works without it
    from huggingface_hub import HfApi, login, whoami
except ImportError:  # pragma: no cover - exercised only without the extra
    HfApi = login = whoami = None

__all__ = ["push", "push_image", "required_files"]

_REQUIRED = ("openenv.yaml", "__init__.py", "client.py", "README.md")


def required_files(env_dir: Path) -> tuple[str, dict[str, Any]]:
    """0.10's structure check: (name, manifest) from ``openenv.yaml``, or ``BadParameter``."""
    missing = [name for name in _REQUIRED if not (env_dir / name).exists()]
    if not missing and not (env_dir / "Dockerfile").exists():
        if not (env_dir / "server" / "Dockerfile").exists():
            missing.append("server/Dockerfile or Dockerfile at env root")
        else:
            missing += [f for f in ("server/__init__.py", "server/app.py") if not (env_dir / f).exists()]
    if not missing and not (env_dir / "pyproject.toml").exists():
        raise click.BadParameter("Invalid OpenEnv environment structure: No dependency specification found. "
                                 "'pyproject.toml' is required.")  # fmt: skip
    if missing:
        raise click.BadParameter(f"Invalid OpenEnv environment structure: Required file missing: {missing[0]}")
    import yaml

    try:
        manifest = yaml.safe_load((env_dir / "openenv.yaml").read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"Failed to parse openenv.yaml: {exc}") from None
    if not isinstance(manifest, dict):
        raise click.BadParameter("openenv.yaml must be a YAML dictionary")
    if not manifest.get("name"):
        raise click.BadParameter("openenv.yaml must contain a 'name' field")
    return str(manifest["name"]), manifest


def push_image(tag: str, *, docker_host: str | None = None, on_log: Any = None) -> None:
    """``docker push tag`` through the engine API; a refused or failed push is one ``ClickException``."""
    import docker.errors

    from openenv.core.containers.runtime.docker_engine import engine_client
    from openenv.core.containers.runtime.errors import ProviderError

    repository, _, version = tag.rpartition(":") if ":" in tag.rsplit("/", 1)[-1] else (tag, "", "latest")
    try:
        client = engine_client(docker_host, timeout=600)
    except ProviderError as exc:
        raise click.ClickException(exc.message) from None
    try:
        for chunk in client.images.push(repository, tag=version, stream=True, decode=True):
            if "error" in chunk:
                raise click.ClickException(f"Docker push of {tag} failed: {chunk['error'].strip()}")
            if on_log is not None and chunk.get("status"):
                on_log(" ".join(str(chunk[k]) for k in ("id", "status") if chunk.get(k)))
    except docker.errors.APIError as exc:
        raise click.ClickException(f"Docker push of {tag} failed: {exc.explanation or exc}") from None
    finally:
        client.close()


@click.command()
@click.argument("directory", required=False)
@click.option("--repo-id", "-r", default=None, help="'repo_name' or 'namespace/repo_name' (default: <user>/<env name>).")
@click.option("--base-image", "-b", default=None, help="Base image (replaces the Dockerfile's FROM; a build arg for --registry).")
@click.option("--interface/--no-interface", "interface", default=None,
              help="The web interface (default: on for Spaces, off for --registry).")
@click.option("--registry", default=None, help="Push the image to this registry (e.g. localhost:5000, docker.io/user).")
@click.option("--private", is_flag=True, help="Deploy the Space as private.")
@click.option("--create-pr", is_flag=True, help="Open a pull request instead of pushing to the default branch.")
@click.option("--exclude", default=None, help="A file of extra glob patterns to leave out of the upload.")
@click.option("--delete", multiple=True, help="Remote file pattern to delete in the same commit (repeatable).")
@click.option("--hardware", "-H", default=None, help="Space hardware (e.g. cpu-basic, t4-medium).")
@click.option("--count", "-n", default=1, type=click.IntRange(min=1), help="Deploy N Spaces (<repo>-1 ... <repo>-N).")
@click.option("--env-var", "-e", "env_vars", multiple=True, help="Space variable KEY=VALUE (repeatable).")
@click.option("--secret", "secrets", multiple=True, help="Space secret KEY=VALUE (repeatable; never printed).")
@click.option("--offline", is_flag=True, help="--registry: build from a host-built wheelhouse (ours).")
def push(directory: str | None, repo_id: str | None, base_image: str | None, interface: bool | None,
         registry: str | None, private: bool, create_pr: bool, exclude: str | None, delete: tuple[str, ...],
         hardware: str | None, count: int, env_vars: tuple[str, ...], secrets: tuple[str, ...],
         offline: bool) -> None:
    """Push the env in DIRECTORY (default: the current one) to a Hugging Face Space or a registry."""
    if count > 1 and registry:
        raise click.ClickException("--count cannot be used with --registry")
    if count > 1 and create_pr:
        raise click.ClickException("--count cannot be used with --create-pr")
    env_dir = Path(directory or ".").resolve()
    if not env_dir.is_dir():
        raise click.BadParameter(f"Directory does not exist: {env_dir}")
    if not (env_dir / "openenv.yaml").exists():
        raise click.ClickException(f"Not an OpenEnv environment directory (missing openenv.yaml): {env_dir}\n"
                                   "Hint: Run this command from the environment root directory")  # fmt: skip
    env_name, manifest = required_files(env_dir)
    click.echo(f"✓ Found OpenEnv environment: {env_name}")
    enable_interface = interface if interface is not None else registry is None
    variables = manifest.get("variables")
    variables = {} if variables is None else variables
    if not isinstance(variables, dict):
        raise click.BadParameter("openenv.yaml 'variables' must be a mapping of KEY: value")
    if registry and (env_vars or secrets):
        raise click.BadParameter("--env-var/--secret cannot be used with --registry: a registry push sets no "
                                 "Space settings")  # fmt: skip
    if create_pr and (env_vars or secrets):
        raise click.BadParameter("--env-var/--secret cannot be used with --create-pr: Space settings apply to the "
                                 "live Space after the merge")  # fmt: skip
    merged = {str(k): str(v) for k, v in variables.items()} | parse_pairs(env_vars, flag="--env-var")
    hidden = parse_pairs(secrets, flag="--secret", secret=True)
    if registry:
        _to_registry(env_dir, env_name, registry, base_image=base_image, offline=offline,
                     enable_interface=enable_interface)
        return
    _to_spaces(env_dir, env_name, repo_id, base_image=base_image, enable_interface=enable_interface,
               private=private, create_pr=create_pr, exclude=exclude, delete=list(delete) or None,
               hardware=hardware, count=count, variables=merged, secrets=hidden)


def _to_registry(env_dir: Path, env_name: str, registry: str, *, base_image: str | None, offline: bool,
                 enable_interface: bool) -> None:
    from openenv.cli.build import build_image

    tag = f"{registry.rstrip('/')}/{env_name}:latest"
    click.echo(f"Building Docker image: {tag}")
    build_image(str(env_dir), tag=tag, base_image=base_image, offline=offline,
                build_args={"ENABLE_WEB_INTERFACE": "true"} if enable_interface else None)
    click.echo("✓ Docker build successful")
    click.echo(f"Pushing to registry: {registry}")
    push_image(tag, on_log=lambda line: click.echo(line, err=True))
    click.echo("\n✓ Deployment complete!")
    click.echo(f"Image: {tag}")


def _to_spaces(env_dir: Path, env_name: str, repo_id: str | None, *, base_image: str | None,
               enable_interface: bool, private: bool, create_pr: bool, exclude: str | None,
               delete: list[str] | None, hardware: str | None, count: int, variables: dict[str, str],
               secrets: dict[str, str]) -> None:
    from openenv.cli.push_stage import load_ignore_patterns, stage

    patterns = load_ignore_patterns(env_dir, exclude)
    need_hub(HfApi)
    user = hub_user(whoami, login)
    click.echo(f"✓ Authenticated as: {user}")
    repo_id = repo_id or f"{user}/{env_name}"
    if repo_id.count("/") > 1:
        raise click.BadParameter(f"Invalid repo-id format: {repo_id!r}. Repo id must be in the form "
                                 "'repo_name' or 'namespace/repo_name'.")  # fmt: skip
    repo_id = repo_id if "/" in repo_id else f"{user}/{repo_id}"
    api = HfApi()
    targets = [f"{repo_id}-{i}" for i in range(1, count + 1)] if count > 1 else [repo_id]
    with tempfile.TemporaryDirectory(prefix="openenv-push-") as tmp:
        staged = Path(tmp) / "staging"
        stage(env_dir, env_name, staged, patterns, base_image=base_image, enable_interface=enable_interface)
        for i, target in enumerate(targets, 1):
            if count > 1:
                click.echo(f"\n[{i}/{count}] Deploying {target}...")
            if not create_pr:  # as 0.10: a failed create is a warning; the upload then says what is wrong
                options = {"space_hardware": hardware} if hardware else {}
                try:
                    call_hub(f"Creating the Space {target}", api.create_repo, repo_id=target, repo_type="space",
                             space_sdk="docker", private=private, exist_ok=True, **options)
                    click.echo(f"✓ Space {target} is ready")
                except HubError as exc:
                    click.echo(f"⚠ Space creation: {exc.message}")
            click.echo(f"Uploading files to {target}{' (as a pull request)' if create_pr else ''}...")
            result = call_hub(f"Uploading to {target}", api.upload_folder, folder_path=str(staged),
                              repo_id=target, repo_type="space", create_pr=create_pr,
                              ignore_patterns=patterns, delete_patterns=delete)
            click.echo("✓ Upload completed successfully")
            if create_pr and getattr(result, "pr_url", None):
                click.echo(f"Pull request: {result.pr_url}")
            if not create_pr:
                for key, value in variables.items():
                    call_hub(f"Failed to set variable {key}", api.add_space_variable, repo_id=target, key=key,
                             value=value)  # fmt: skip
                    click.echo(f"✓ Set variable {key} on {target}")
                for key, value in secrets.items():
                    call_hub(f"Failed to set secret {key}", api.add_space_secret, repo_id=target, key=key, value=value)
                    click.echo(f"✓ Set secret {key} on {target}")
    if count > 1:
        click.echo(f"\n✓ All {count} instances deployed!")
        for i, target in enumerate(targets, 1):
            click.echo(f"Visit instance {i}: {hub_endpoint()}/spaces/{target}")
    else:
        click.echo("\n✓ Deployment complete!")
        click.echo(f"Visit your space at: {hub_endpoint()}/spaces/{targets[0]}")


"""``openenv build``: build an environment's Docker image."""

from __future__ import annotations

import click

__all__ = ["build"]


@click.command()
@click.argument("env")
@click.option("--tag", "-t", default=None, help="Image tag (default openenv-<env>:latest).")
@click.option(
    "--base-image",
    envvar="OPENENV_BASE_IMAGE",
    default=None,
    help="BASE_IMAGE build arg (default python:3.11-slim; OPENENV_BASE_IMAGE).",
)
@click.option(
    "--offline",
    is_flag=True,
    help="Install everything from a wheelhouse built on this host (no index needed in the build).",
)
@click.option("--force", is_flag=True, help="Rebuild even when the image is up to date.")
@click.option("--quiet", "-q", is_flag=True, help="Do not stream the build output.")
def build(env: str, tag: str | None, base_image: str | None, offline: bool, force: bool, quiet: bool) -> None:
    """Build the image of ENV: a bundled env name (echo, repl) or an env directory."""
    from openenv.core.containers.images import build_env_image
    from openenv.core.containers.runtime.errors import ProviderError

    try:
        built = build_env_image(
            env,
            tag=tag,
            base_image=base_image,
            offline=offline,
            force=force,
            on_log=None if quiet else lambda line: click.echo(line, err=True),
        )
    except ProviderError as exc:
        tail = exc.details.get("log_tail")
        raise click.ClickException(f"{exc.message}\n{tail}" if tail else exc.message) from None
    click.echo(built)

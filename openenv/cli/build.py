"""``openenv build``: build an environment's Docker image (0.10's flags, plus ours)."""

from __future__ import annotations

import click

__all__ = ["build", "parse_build_args"]


def parse_build_args(raw: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; others are skipped with 0.10's warning."""
    args: dict[str, str] = {}
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key:
            click.echo(f"Warning: Invalid build arg format: {item}", err=True)
            continue
        args[key] = value
    return args


@click.command()
@click.argument("env", required=False, default=".")
@click.option("--tag", "-t", default=None, help="Image tag (default openenv-<env name without _env>:latest).")
@click.option("--context", "-c", default=None, type=click.Path(file_okay=False),
              help="Build context for the env's own Dockerfile (default: the env directory).")
@click.option("--dockerfile", "-f", default=None, type=click.Path(dir_okay=False),
              help="Build this Dockerfile as it is (default: the shared one over a staged context).")
@click.option("--no-cache", is_flag=True, help="Build without using cache.")
@click.option("--build-arg", "build_arg", multiple=True, metavar="KEY=VALUE",
              help="Build arguments (repeatable).")
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
def build(env: str, tag: str | None, context: str | None, dockerfile: str | None, no_cache: bool,
          build_arg: tuple[str, ...], base_image: str | None, offline: bool, force: bool, quiet: bool) -> None:
    """Build the image of ENV: an env directory (default: the current one) or a bundled env name.

    Prints the image tag on stdout; the build log goes to stderr.
    """
    built = build_image(env, tag=tag, context=context, dockerfile=dockerfile, no_cache=no_cache,
                        build_args=parse_build_args(build_arg), base_image=base_image, offline=offline,
                        force=force, quiet=quiet)
    click.echo(built)


def build_image(env: str, *, quiet: bool = False, **options) -> str:  # noqa: ANN003 - build_env_image's
    """Build with ``build_env_image``; a failure is one ``ClickException`` (with the log tail)."""
    from openenv.core.containers.images import build_env_image
    from openenv.core.containers.runtime.errors import ProviderError

    try:
        built = build_env_image(env, on_log=None if quiet else lambda line: click.echo(line, err=True), **options)
    except ProviderError as exc:
        tail = exc.details.get("log_tail")
        raise click.ClickException(f"{exc.message}\n{tail}" if tail else exc.message) from None
    return built

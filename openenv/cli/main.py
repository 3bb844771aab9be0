"""The ``openenv`` command group; each command lives in its own module."""

from __future__ import annotations

import click

from openenv.cli.serve import serve


@click.group()
@click.version_option(package_name="openenv-studio")
def cli() -> None:
    """OpenEnv Studio: serve, build, record and inspect RL environments."""


cli.add_command(serve)


def main() -> None:
    cli()

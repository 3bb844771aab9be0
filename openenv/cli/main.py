"""The ``openenv`` command group; each command lives in its own module."""

from __future__ import annotations

import click

from openenv.cli.build import build
from openenv.cli.episodes import episodes
from openenv.cli.init import init
from openenv.cli.serve import serve
from openenv.cli.studio import studio
from openenv.cli.validate import validate


@click.group()
@click.version_option(package_name="openenv-studio")
def cli() -> None:
    """OpenEnv Studio: serve, build, record and inspect RL environments."""


cli.add_command(serve)
cli.add_command(build)
cli.add_command(studio)
cli.add_command(episodes)
cli.add_command(validate)
cli.add_command(init)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

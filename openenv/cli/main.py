"""The ``openenv`` command group; each command lives in its own module, imported on first use."""

from __future__ import annotations

import importlib
from typing import Any

import click

# command name -> "module:attribute"; imported lazily so `openenv serve` starts fast.
COMMANDS: dict[str, str] = {
    "build": "openenv.cli.build:build",
    "capture": "openenv.cli.capture:capture",
    "catalog": "openenv.cli.catalog:catalog",
    "collect": "openenv.cli.collect:collect",
    "discover": "openenv.cli.catalog:discover",
    "episodes": "openenv.cli.episodes:episodes",
    "fork": "openenv.cli.commands.fork:fork",
    "import": "openenv.cli.import_env:import_env",
    "init": "openenv.cli.init:init",
    "push": "openenv.cli.commands.push:push",
    "ray": "openenv.cli.ray:ray_group",
    "rollout": "openenv.cli.rollout:rollout",
    "runs": "openenv.cli.runs:runs",
    "serve": "openenv.cli.serve:serve",
    "skills": "openenv.cli.skills:skills",
    "studio": "openenv.cli.studio:studio",
    "validate": "openenv.cli.validate:validate",
}


class LazyGroup(click.Group):
    """A click group whose commands are imported only when invoked (or listed in --help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Any:
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        module, _, attr = spec.partition(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup)
@click.version_option(package_name="openenv")
def cli() -> None:
    """OpenEnv Studio: serve, build, record and inspect RL environments."""


def main() -> None:
    """The ``openenv`` console script: as ``python -m openenv.cli`` (Ctrl-C exits 130, an
    unexpected error is one ``Error: ...`` line and exit 1, as on 0.10)."""
    from openenv.cli.__main__ import main as run

    run()


if __name__ == "__main__":
    main()

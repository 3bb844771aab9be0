"""``python -m openenv``: the ``openenv`` command."""

from openenv.cli.main import main

main()

"""``python -m openenv.cli``: the ``openenv`` command, with 0.10's ``app`` and ``main`` names."""

from __future__ import annotations

import sys

from openenv.cli.main import cli as app


def main() -> None:
    """Run the command line; Ctrl-C exits 130 and an uncaught error exits 1 with one line (as 0.10)."""
    try:
        app()
    except KeyboardInterrupt:
        print("\nOperation cancelled by user.")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - no traceback reaches a user
        print(f"Error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

"""``openenv validate``: check an env directory or a running server against the contract."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

__all__ = ["validate"]

_URL_SCHEMES = ("http://", "https://", "ws://", "wss://")


def _parse_actions(values: tuple[str, ...]) -> list[dict]:
    actions = []
    for raw in values:
        try:
            action = json.loads(raw)
        except ValueError as exc:
            raise click.BadParameter(f"not JSON: {raw!r} ({exc})", param_hint="--action") from None
        if not isinstance(action, dict):
            raise click.BadParameter(f"an action must be a JSON object: {raw!r}", param_hint="--action")
        actions.append(action)
    return actions


def _http_url(url: str) -> str:
    for ws, http in (("ws://", "http://"), ("wss://", "https://")):
        if url.startswith(ws):
            url = http + url[len(ws):]
    url = url.rstrip("/")
    return url[: -len("/ws")] if url.endswith("/ws") else url


@click.command()
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--action", "actions", multiple=True, metavar="JSON",
              help="An action to step with, as a JSON object (repeatable; default: sampled from /schema).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0), help="Seed for episodes.")
@click.option("--max-steps", default=50, show_default=True, type=click.IntRange(1),
              help="Bound on the episode played to reach done.")
@click.option("--nondeterministic-steps", is_flag=True,
              help="Steps carry timings or noise: do not require replayed episodes to match.")
@click.option("--token", envvar="OPENENV_TOKEN", default=None, help="Bearer token for a URL (OPENENV_TOKEN).")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True, type=float, help="Seconds per reply.")
def validate(target: str, as_json: bool, actions: tuple[str, ...], seed: int, max_steps: int,
             nondeterministic_steps: bool, token: str | None, timeout_s: float) -> None:
    """Check TARGET, an env directory or a server URL; exit 1 when any check fails.

    A directory: its files, the contract in process, then a real episode against its app served
    on 127.0.0.1. A URL: a real episode over WebSocket and HTTP (shapes, schemas, seeded
    determinism, error codes, capacity, close).
    """
    from openenv.core.errors import OpenEnvError

    parsed = _parse_actions(actions)
    options = {"seed": seed, "max_steps": max_steps, "deterministic_steps": not nondeterministic_steps}
    try:
        if target.startswith(_URL_SCHEMES):
            from openenv.core.testing_wire_checks import run_wire_checks

            report = run_wire_checks(_http_url(target), actions=parsed or None, token=token,
                                     timeout_s=timeout_s, **options)
        elif Path(target).is_dir():
            from openenv.cli.validate_checks import validate_directory

            report = validate_directory(target, actions=parsed or None, **options)
        else:
            raise click.ClickException(f"{target}: not a directory or an http(s):// URL")
    except OpenEnvError as exc:
        raise click.ClickException(f"{target}: {exc.message}") from None
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format_text())
    sys.exit(0 if report.ok else 1)

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
@click.argument("target", required=False)
@click.option("--url", "url", default=None, metavar="URL",
              help="A running server to check (0.10's spelling; the same as giving the URL as TARGET).")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON report: 0.10's keys (passed, summary, criteria) and ours (ok, counts, checks).")
@click.option("--action", "actions", multiple=True, metavar="JSON",
              help="An action to step with, as a JSON object (repeatable; default: sampled from /schema).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0), help="Seed for episodes.")
@click.option("--max-steps", default=50, show_default=True, type=click.IntRange(1),
              help="Bound on the episode played to reach done.")
@click.option("--nondeterministic-steps", is_flag=True,
              help="Steps carry timings or noise: do not require replayed episodes to match.")
@click.option("--token", envvar="OPENENV_TOKEN", default=None, help="Bearer token for a URL (OPENENV_TOKEN).")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True, type=float, help="Seconds per reply.")
def validate(target: str | None, url: str | None, as_json: bool, actions: tuple[str, ...], seed: int,
             max_steps: int, nondeterministic_steps: bool, token: str | None, timeout_s: float) -> None:
    """Check TARGET (an env directory or a server URL, or --url URL); exit 1 when any check fails.

    A directory: its files, the contract in process, then a real episode against its app served
    on 127.0.0.1. A URL: 0.10's runtime criteria (OpenAPI version, /health, /metadata, /schema,
    /mcp, the mode's routes), then a real episode over WebSocket and HTTP (shapes, schemas, seeded
    determinism, error codes, capacity, close).
    """
    from openenv.core.errors import OpenEnvError
    from openenv.core.testing_runtime010 import report_json

    target = _pick_target(target, url)
    parsed = _parse_actions(actions)
    options = {"seed": seed, "max_steps": max_steps, "deterministic_steps": not nondeterministic_steps}
    runtime = None
    try:
        if target.startswith(_URL_SCHEMES):
            from openenv.core.testing_runtime010 import runtime_criteria
            from openenv.core.testing_wire_checks import run_wire_checks

            base = _http_url(target)
            headers = {"Authorization": f"Bearer {token}"} if token else None
            runtime = runtime_criteria(base, timeout_s=timeout_s, headers=headers)
            report = run_wire_checks(base, actions=parsed or None, token=token, timeout_s=timeout_s, **options)
        elif Path(target).is_dir():
            from openenv.cli.validate_checks import validate_directory

            report = validate_directory(target, actions=parsed or None, **options)
        else:
            raise click.ClickException(f"{target}: not a directory or an http(s):// URL")
    except OpenEnvError as exc:
        raise click.ClickException(f"{target}: {exc.message}") from None
    data = report_json(report, runtime)
    click.echo(json.dumps(data, indent=2) if as_json else _text(report, runtime))
    sys.exit(0 if data["passed"] else 1)


def _pick_target(target: str | None, url: str | None) -> str:
    if url is not None:
        if target is not None and target != url:
            raise click.UsageError("give a server either as TARGET or as --url, not both")
        if not url.startswith(_URL_SCHEMES):
            url = "http://" + url  # 0.10 accepts a bare host:port
        return url
    return target if target is not None else "."


def _text(report, runtime) -> str:  # noqa: ANN001
    if not runtime:
        return report.format_text()
    lines = [f"0.10 runtime criteria ({runtime['standard_profile']}, API {runtime['standard_version']}, "
             f"mode {runtime['mode']})"]
    for c in runtime["criteria"]:
        mark = "PASS" if c["passed"] else ("FAIL" if c["required"] else "WARN")
        lines.append(f"  {mark}  {c['id']}  {c.get('details', '') if not c['passed'] else ''}".rstrip())
    return "\n".join(lines) + "\n" + report.format_text()

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


EXIT_PASS, EXIT_FAIL, EXIT_UNSUPPORTED, EXIT_INTERNAL = 0, 1, 2, 3  # 0.10's exit codes
LEVELS = ("static", "runtime", "semantic")
POLICIES = ("v1", "v2")  # 0.10's committed severity policies


def _fail(message: str, code: int) -> None:
    click.echo(message, err=True)
    sys.exit(code)


@click.command()
@click.argument("target", required=False)
@click.option("--url", "url", default=None, metavar="URL",
              help="A running server to check (0.10's spelling; the same as giving the URL as TARGET).")
@click.option("--level", default="semantic", show_default=True,
              help="Ceiling: static (files and manifest, no code run), runtime or semantic (everything).")
@click.option("--skip-build", is_flag=True, help="Accepted for 0.10's scripts: a directory is checked without an image.")
@click.option("--local", is_flag=True, help="Explicitly select the local-package mode (incompatible with a URL).")
@click.option("--policy", "policy_version", default=None, metavar="VERSION",
              help="0.10's severity policy version (v1, v2): checked and recorded in the report.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON report: 0.10's keys (passed, summary, criteria) and ours (ok, counts, checks).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the JSON report to this file.")
@click.option("--action", "actions", multiple=True, metavar="JSON",
              help="An action to step with, as a JSON object (repeatable; default: sampled from /schema).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0), help="Seed for episodes.")
@click.option("--max-steps", default=50, show_default=True, type=click.IntRange(1),
              help="Bound on the episode played to reach done.")
@click.option("--nondeterministic-steps", is_flag=True,
              help="Steps carry timings or noise: do not require replayed episodes to match.")
@click.option("--token", envvar="OPENENV_TOKEN", default=None, help="Bearer token for a URL (OPENENV_TOKEN).")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds per reply.")
def validate(target: str | None, url: str | None, level: str, skip_build: bool, local: bool,
             policy_version: str | None, as_json: bool, output: Path | None, actions: tuple[str, ...], seed: int,
             max_steps: int, nondeterministic_steps: bool, token: str | None, timeout_s: float) -> None:
    """Check TARGET (an env directory, default the current one, or a server URL, or --url URL).

    A directory: its files and manifest, the contract in process, then a real episode against its
    app served on 127.0.0.1. A URL: 0.10's runtime criteria (OpenAPI version, /health, /metadata,
    /schema, /mcp, the mode's routes), then a real episode over WebSocket and HTTP (shapes,
    schemas, seeded determinism, error codes, capacity, close).

    Exit codes (0.10's): 0 pass or warnings, 1 fail, 2 not a package directory, 3 bad level,
    policy or report path.
    """
    from openenv.core.errors import OpenEnvError
    from openenv.core.testing_runtime010 import report_json

    target = _pick_target(target, url)
    parsed = _parse_actions(actions)
    options = {"seed": seed, "max_steps": max_steps, "deterministic_steps": not nondeterministic_steps}
    is_url = target.startswith(_URL_SCHEMES)
    if is_url and local:
        _fail("Error: --local cannot be combined with a running URL", EXIT_FAIL)
    if not is_url:
        if level not in LEVELS:
            _fail(f"Error: unknown level {level!r}; expected one of {sorted(LEVELS)}", EXIT_INTERNAL)
        if not Path(target).is_dir():
            _fail(f"Error: not a package directory: {target}", EXIT_UNSUPPORTED)
    if policy_version is not None and policy_version not in POLICIES:
        _fail(f"Internal error: no severity policy for version {policy_version!r}", EXIT_INTERNAL)
    if output is not None and not output.parent.is_dir():
        _fail("Internal error: report output directory does not exist", EXIT_INTERNAL)
    runtime = None
    try:
        if is_url:
            from openenv.core.testing_runtime010 import runtime_criteria
            from openenv.core.testing_wire_checks import run_wire_checks

            base = _http_url(target)
            headers = {"Authorization": f"Bearer {token}"} if token else None
            runtime = runtime_criteria(base, timeout_s=timeout_s, headers=headers)
            report = run_wire_checks(base, actions=parsed or None, token=token, timeout_s=timeout_s, **options)
        else:
            from openenv.cli.validate_checks import validate_directory

            report = validate_directory(target, actions=parsed or None, static_only=level == "static", **options)
    except OpenEnvError as exc:
        raise click.ClickException(f"{target}: {exc.message}") from None
    data = report_json(report, runtime)
    if not is_url:
        data.update(_local_keys(report, target, level, policy_version))
    text = json.dumps(data, indent=2)
    if output is not None:
        output.write_text(text + "\n", encoding="utf-8")
    click.echo(text if as_json else _text(report, runtime))
    sys.exit(EXIT_PASS if data["passed"] else EXIT_FAIL)


def _local_keys(report, target: str, level: str, policy_version: str | None) -> dict:  # noqa: ANN001
    """0.10's local report keys (``verdict``, ``signature``, ``levels_run``, ``results``) over our checks."""
    statuses = [r.status for r in report.results]
    verdict = "fail" if "fail" in statuses else ("warn" if {"warn", "skip"} & set(statuses) else "pass")
    manifest = Path(target) / "openenv.yaml"
    return {
        "target": str(Path(target).resolve()),
        "signature": manifest.name if manifest.is_file() else None,
        "policy_version": policy_version,
        "lane": "local",
        "levels_run": [1] if level == "static" else [1, 2],
        "verdict": verdict,
        "results": [{"check_id": r.name, "status": r.status, "evidence": [r.message] if r.message else []}
                    for r in report.results],
    }


def _pick_target(target: str | None, url: str | None) -> str:
    if url is not None:
        if target is not None and not target.startswith(_URL_SCHEMES):
            _fail("Error: Cannot combine a local path argument with --url runtime validation", EXIT_FAIL)
        if not url.startswith(_URL_SCHEMES):
            url = "http://" + url  # 0.10 accepts a bare host:port
        if target is not None and target != url:
            _fail("Error: Conflicting runtime targets provided via argument and --url (give one, not both)",
                  EXIT_FAIL)
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

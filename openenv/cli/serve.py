"""``openenv serve``: run an environment server with uvicorn."""

from __future__ import annotations

import os

import click

from openenv.auto import TargetError, load_app
from openenv.core.env_server.auth import is_loopback

__all__ = ["serve"]


@click.command()
@click.argument("target", required=False, default=".")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", "-p", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port to bind.")
@click.option("--token", envvar="OPENENV_TOKEN", default=None, help="Require this bearer token (OPENENV_TOKEN).")
@click.option(
    "--allow-remote-without-token",
    is_flag=True,
    help="Bind a non-loopback address without a token (only behind a loopback-only publish, e.g. Docker).",
)
@click.option("--max-sessions", type=click.IntRange(1), default=None, help="Session cap (OPENENV_MAX_SESSIONS).")
@click.option("--step-timeout", type=float, default=None, help="Default step deadline in seconds.")
@click.option("--no-web", is_flag=True, help="Do not serve the /web page.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests addressed to NAME (repeatable; OPENENV_ALLOW_HOSTS; see docs/security.md).")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="Let pages from ORIGIN (scheme://host[:port]) use this server (repeatable; OPENENV_ALLOW_ORIGINS).")
@click.option("--log-level", default="warning", show_default=True)
@click.option("--reload", is_flag=True, help="Restart when a file of the env changes (development).")
def serve(
    target: str,
    host: str,
    port: int,
    token: str | None,
    allow_remote_without_token: bool,
    max_sessions: int | None,
    step_timeout: float | None,
    no_web: bool,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    log_level: str,
    reload: bool,
) -> None:
    """Serve TARGET (default: the current directory): an env directory, a bundled env name (echo,
    repl, toolbox), an installed env package or MODULE:APP."""
    import uvicorn

    from openenv.core.env_server.auth import TokenAuthMiddleware
    from openenv.core.env_server.http_server import DEFAULT_MAX_MESSAGE_BYTES
    from openenv.core.origin_policy import ALLOW_HOSTS_ENV, ALLOW_ORIGINS_ENV, OriginGuard, OriginPolicy

    if not is_loopback(host) and not token and not allow_remote_without_token:
        raise click.UsageError(
            f"Refusing to bind {host} without a token: environments run code. "
            "Pass --token (or OPENENV_TOKEN), or bind 127.0.0.1."
        )
    if max_sessions:
        os.environ["OPENENV_MAX_SESSIONS"] = str(max_sessions)
    if step_timeout:
        os.environ["OPENENV_STEP_TIMEOUT_S"] = str(step_timeout)
    if no_web:
        os.environ["OPENENV_WEB"] = "0"
    for name, values in ((ALLOW_HOSTS_ENV, allow_hosts), (ALLOW_ORIGINS_ENV, allow_origins)):
        if values:  # the env's own create_app reads them too
            os.environ[name] = ",".join(filter(None, [os.environ.get(name, ""), *values]))
    try:
        policy = OriginPolicy.from_env(bind_host=host)
    except ValueError as exc:
        raise click.UsageError(f"--allow-origin: {exc}") from None
    try:
        app = load_app(target)
    except TargetError as exc:
        raise click.ClickException(str(exc)) from None
    if token:
        app = TokenAuthMiddleware(app, token)
    app = OriginGuard(app, policy)  # also for a MODULE:APP not made by create_app
    click.echo(f"openenv: serving {target} on http://{host}:{port}", err=True)
    if reload:
        _serve_reloading(target, host, port, token, log_level)
        return
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        ws_max_size=DEFAULT_MAX_MESSAGE_BYTES + 1024 * 1024,
        ws_per_message_deflate=False,
        ws_ping_interval=10.0,
        ws_ping_timeout=10.0,
        timeout_keep_alive=5,
        lifespan="on",
    )
    uvicorn.Server(config).run()



_RELOAD_TARGET = "OPENENV_SERVE_RELOAD_TARGET"


def _serve_reloading(target: str, host: str, port: int, token: str | None, log_level: str) -> None:
    """uvicorn's reloader: a child process rebuilds the app (``reloaded_app``) on each change."""
    from pathlib import Path

    import uvicorn

    from openenv.auto.resolve import resolve

    found = resolve(target, docker=False)
    watch = [str(Path(target).resolve())] if Path(target).is_dir() else [found.path or os.getcwd()]
    os.environ[_RELOAD_TARGET] = target
    if token:
        os.environ["OPENENV_TOKEN"] = token
    uvicorn.run("openenv.cli.serve:reloaded_app", factory=True, reload=True, reload_dirs=watch, host=host,
                port=port, log_level=log_level, ws_per_message_deflate=False)


def reloaded_app():  # noqa: ANN201 - an ASGI app
    """The app uvicorn's reloader child serves: the target ``openenv serve --reload`` was given."""
    from openenv.core.env_server.auth import TokenAuthMiddleware

    app = load_app(os.environ[_RELOAD_TARGET])
    token = os.environ.get("OPENENV_TOKEN")
    return TokenAuthMiddleware(app, token) if token else app

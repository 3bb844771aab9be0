"""``openenv studio``: the web studio (launch, play, record, replay) on 127.0.0.1:8000."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

__all__ = ["studio"]


@click.command()
@click.option("--host", default=None, help="Address to bind (default 127.0.0.1; others need --token).")
@click.option("--port", default=None, type=click.IntRange(0, 65535), help="Port to bind (default 8000).")
@click.option("--data-dir", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Data directory (default $XDG_DATA_HOME/openenv-studio).")
@click.option("--token", default=None, help="Access token (required off loopback; OPENENV_STUDIO_TOKEN).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests addressed to NAME (repeatable; see docs/security.md).")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="Let pages from ORIGIN (scheme://host[:port]) post to the studio (repeatable).")
@click.option("--tokenizer", default=None, metavar="PATH",
              help="A local tokenizer.json (or a directory holding one) for token text in the token view.")
@click.option("--log-level", default="warning", show_default=True)
def studio(host: str | None, port: int | None, data_dir: Path | None, token: str | None,
           allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...], tokenizer: str | None, log_level: str) -> None:
    """Serve the OpenEnv Studio web app. Every setting also reads OPENENV_STUDIO_<NAME>."""
    import uvicorn

    from webui.studio import create_studio_app, load_settings
    from webui.studio.errors import SettingsError

    try:
        settings = load_settings({"host": host, "port": port, "data_dir": data_dir, "token": token,
                                  "allow_hosts": allow_hosts or None, "allow_origins": allow_origins or None,
                                  "tokenizer": tokenizer})
    except SettingsError as exc:
        raise click.UsageError(exc.message) from None
    # the heavy read-only pages in a second process (webui.studio.offload); OPENENV_STUDIO_READER=0: in this one
    reader = os.environ.get("OPENENV_STUDIO_READER", "1") != "0" and sys.platform != "win32"  # a Unix socket
    app = create_studio_app(settings, reader_process=reader)
    shown = f"http://{settings.host}:{settings.port}/"
    if settings.token:
        shown += "?token=<your token>"
    click.echo(f"openenv studio: {shown} (data in {settings.data_dir})", err=True)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=log_level,
                ws_per_message_deflate=False, lifespan="on")

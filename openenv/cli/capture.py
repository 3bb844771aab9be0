"""``openenv capture``: the token-capture proxy in front of an OpenAI-compatible engine.

    openenv capture --llm-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B --db runs.db
    # then, per rollout: curl -X POST http://127.0.0.1:8100/sessions  -> {"session_id": "s…"}
    # and point the harness at http://127.0.0.1:8100/v1 with that id as its API key

Every call is recorded in the episode store (``--db``, default: the studio's) as it completes.
Binds 127.0.0.1; another address needs ``--admin-key`` (or ``OPENENV_CAPTURE_ADMIN_KEY``) for the
session routes. Sessions may name another engine (``llm_url``) only when ``--allow-llm-url`` lists it;
browsers' cross-origin requests and unknown ``Host`` names are refused (docs/security.md). The engine's own key is read from an environment variable (``--engine-key-env``)
and never leaves this process.
"""

from __future__ import annotations

import os

import click

from openenv.recording.default_store import DEFAULT_STORE_ENV, default_store_target

__all__ = ["capture"]


@click.command("capture")
@click.option("--llm-url", required=True, help="The engine's OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1).")
@click.option("--model", default=None, help="Model name sent to the engine (overrides what the harness asks for).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8100, show_default=True, type=click.IntRange(0, 65535))
@click.option("--db", envvar=DEFAULT_STORE_ENV, default=None, help="Episode store: SQLite path or postgresql:// URL.")
@click.option("--level", type=click.Choice(["tokens", "logprobs", "text"]), default="tokens", show_default=True,
              help="What the engine returns: ids + logprobs (trainable), logprobs only, or text (eval rollouts).")
@click.option("--label", default=None, help="Label of the recorded episodes.")
@click.option("--engine-key-env", default=None, metavar="VAR", help="Environment variable holding the engine's API key.")
@click.option("--admin-key", envvar="OPENENV_CAPTURE_ADMIN_KEY", default=None,
              help="Key the /sessions routes require (OPENENV_CAPTURE_ADMIN_KEY).")
@click.option("--allow-llm-url", "allowed_llm_urls", multiple=True, metavar="URL",
              help="Another engine sessions may name in POST /sessions (repeatable; '*': any). --llm-url always is.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests addressed to NAME (repeatable; see docs/security.md).")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="Let pages from ORIGIN (scheme://host[:port]) use the proxy (repeatable).")
@click.option("--open", "open_keys", is_flag=True, help="Accept any API key as a session id (no POST /sessions needed).")
@click.option("--max-output-tokens", default=8192, show_default=True, type=click.IntRange(0),
              help="Cap on requested completion length (0: none).")
@click.option("--max-model-calls", default=0, show_default=True, type=click.IntRange(0),
              help="Model calls per session before the proxy ends the agent's loop (0: unlimited).")
def capture(llm_url: str, model: str | None, host: str, port: int, db: str | None, level: str, label: str | None,
            engine_key_env: str | None, admin_key: str | None, allowed_llm_urls: tuple[str, ...],
            allow_hosts: tuple[str, ...], allow_origins: tuple[str, ...], open_keys: bool, max_output_tokens: int,
            max_model_calls: int) -> None:
    """Serve the capture proxy until interrupted."""
    import uvicorn

    from openenv.capture import create_capture_app
    from openenv.core.env_server.auth import is_loopback
    from openenv.core.origin_policy import OriginPolicy
    from openenv.recording import EpisodeStore

    if not is_loopback(host) and not admin_key:
        raise click.UsageError(f"refusing to bind {host} without --admin-key (the session routes hand out rollouts)")
    engine_key = None
    if engine_key_env:
        engine_key = os.environ.get(engine_key_env)
        if not engine_key:
            raise click.UsageError(f"--engine-key-env {engine_key_env}: that variable is not set")
    try:
        policy = OriginPolicy.from_env(allow_hosts=allow_hosts, allow_origins=allow_origins, bind_host=host)
    except ValueError as exc:
        raise click.UsageError(f"--allow-origin: {exc}") from None
    store = EpisodeStore(db or default_store_target())
    try:
        app = create_capture_app(llm_url=llm_url, model=model, level=level, api_key=engine_key, admin_key=admin_key,
                                 require_registered=not open_keys, max_output_tokens=max_output_tokens or None,
                                 max_model_calls=max_model_calls, store=store, label=label,
                                 allowed_llm_urls=allowed_llm_urls, origin_policy=policy)
        click.echo(f"capture proxy on http://{host}:{port}/v1 -> {llm_url} (level {level}, store {store._display()})",
                   err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        store.close()

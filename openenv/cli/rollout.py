"""``openenv rollout``: run N model episodes against an environment, K at a time, all recorded.

The store is ``--db`` (a SQLite path or a ``postgresql://`` URL, as for ``openenv episodes``), else
``$OPENENV_EPISODES_DB``, else the studio's database (``<studio data dir>/episodes.db``, so the
episodes show up in the studio as they are played, and in ``openenv episodes``). The API key is read from the environment
variable named by ``--api-key-env`` and never stored.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

__all__ = ["rollout"]


def default_db() -> str:
    """The default episode store: the studio's, so a rollout shows up there and in ``openenv episodes``
    (``openenv.recording.default_store``)."""
    from openenv.recording.default_store import default_store_target

    return default_store_target()


class _Progress:
    """A one-line progress bar on stderr (a line per tenth when stderr is not a terminal)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled = total, enabled
        self.tty = sys.stderr.isatty()
        self.started = self.finished = self.steps = self.failed = 0
        self._last = 0.0
        self._shown_tenth = -1
        self.t0 = time.perf_counter()

    def update(self, results: list[Any]) -> None:
        if not self.enabled:
            return
        self.started = sum(r.status != "pending" for r in results)
        self.finished = sum(r.status in ("finished", "skipped") for r in results)
        self.failed = sum(r.error is not None for r in results)
        self.steps = sum(r.steps for r in results)
        now = time.perf_counter()
        if self.tty:
            if now - self._last >= 0.1 or self.finished == self.total:
                self._last = now
                sys.stderr.write("\r" + self.line())
                sys.stderr.flush()
        else:
            tenth = self.finished * 10 // max(1, self.total)
            if tenth != self._shown_tenth:
                self._shown_tenth = tenth
                sys.stderr.write(self.line() + "\n")

    def line(self) -> str:
        width = 24
        filled = self.finished * width // max(1, self.total)
        bar = "#" * filled + "-" * (width - filled)
        rate = self.steps / max(1e-9, time.perf_counter() - self.t0)
        errors = f"  {self.failed} with errors" if self.failed else ""
        return (f"[{bar}] {self.finished}/{self.total} episodes ({self.started - self.finished} running)  "
                f"{self.steps} steps  {rate:.0f} steps/s{errors}")  # fmt: skip

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


@click.command()
@click.option("--env", "env_target", required=True, help="Environment: bundled name, directory, module:app or URL.")
@click.option("--provider", default="process", show_default=True, type=click.Choice(["process", "ray"]),
              help="What starts a non-URL --env: a local process, or a Ray cluster (--ray-address).")
@click.option("--ray-address", envvar="RAY_ADDRESS", default=None, help="The Ray cluster's head host:port (RAY_ADDRESS).")
@click.option("--env-token", envvar="OPENENV_ENV_TOKEN", default=None,
              help="Bearer token the environment requires (OPENENV_ENV_TOKEN); a Ray env's own is used by itself.")
@click.option("--model-url", required=True, help="OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1).")
@click.option("--model", required=True, help="Model name sent with each request.")
@click.option("--api-key-env", default=None, metavar="VAR", help="Environment variable holding the API key.")
@click.option("--episodes", default=1, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(1, 1024))
@click.option("--max-steps", default=20, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the first episode (then +1 per seed).")
@click.option("--samples-per-seed", default=1, show_default=True, type=click.IntRange(1, 10_000),
              help="Episodes per seed (pass@k uses k up to this).")
@click.option("--label", default=None, help="Label of the recorded episodes (default rollout-<id>).")
@click.option("--temperature", default=None, type=float)
@click.option("--max-tokens", default=None, type=click.IntRange(1))
@click.option("--timeout", "timeout_s", default=120.0, show_default=True, type=float, help="Seconds per model request.")
@click.option("--prompt", "prompt_path", default=None, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Jinja2 template for the prompt (see docs/rollout.md).")
@click.option("--tools", default="auto", show_default=True, type=click.Choice(["auto", "on", "off"]),
              help="Tool calls from an MCP environment's tools.")
@click.option("--success-threshold", default=None, type=float, help="Success: done with return >= this (default > 0).")
@click.option("--capture", type=click.Choice(["tokens", "logprobs"]), default=None,
              help="Ask the engine for its prompt/sampled token ids and logprobs and record them "
                   "(export with `openenv episodes export --format training`).")
@click.option("--db", default=None, help="Episode store: SQLite path or postgresql:// URL (default: the studio's).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def rollout(env_target: str, provider: str, ray_address: str | None, env_token: str | None, model_url: str, model: str, api_key_env: str | None, episodes: int, concurrency: int,
            max_steps: int, seed: int, samples_per_seed: int, label: str | None, temperature: float | None,
            max_tokens: int | None, timeout_s: float, prompt_path: Path | None, tools: str,
            success_threshold: float | None, capture: str | None, db: str | None, as_json: bool,
            quiet: bool) -> None:  # fmt: skip
    """Run model episodes against an environment and record every step and completion."""
    from openenv.core.errors import OpenEnvError
    from openenv.recording import EpisodeStore
    from openenv.rollout import ModelEndpoint, Rollout, RolloutSettings, format_table, start_env

    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise click.UsageError(f"--api-key-env {api_key_env}: that environment variable is not set")
    template = prompt_path.read_text() if prompt_path is not None else None
    endpoint = ModelEndpoint(model_url, model=model, api_key=api_key, temperature=temperature,
                             max_tokens=max_tokens, timeout_s=timeout_s, capture=capture)  # fmt: skip
    settings = RolloutSettings(episodes=episodes, concurrency=concurrency, max_steps=max_steps, seed=seed,
                               samples_per_seed=samples_per_seed, label=label, template=template, tools=tools,
                               success_threshold=success_threshold)  # fmt: skip
    try:
        store = EpisodeStore(db or default_db())
    except OpenEnvError as exc:
        raise click.ClickException(f"{exc} [{exc.code}]") from None
    progress = _Progress(episodes, enabled=not quiet)
    running = None
    try:
        running = start_env(env_target, provider=provider, token=env_token, ray_address=ray_address)
        run = Rollout(running.base_url, endpoint, store, settings, info={"env_target": env_target},
                      env_headers=running.headers)
        run.on_update = lambda _r: progress.update(run.results)
        if not quiet:
            click.echo(f"openenv rollout: {episodes} episodes of {env_target} with {model} "
                       f"(label {run.label})", err=True)  # fmt: skip
        summary = asyncio.run(run.run())
    except OpenEnvError as exc:
        raise click.ClickException(f"{exc} [{exc.code}]") from None
    except KeyboardInterrupt:
        raise click.ClickException("interrupted: the steps taken so far are recorded") from None
    finally:
        progress.close()
        if running is not None:
            running.close()
        store.close()
    summary = {"label": run.label, "rollout_id": run.id, "env": env_target, "model": model, **summary}
    if as_json:
        summary["episodes_detail"] = [r.to_dict() for r in run.results]
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(format_table(summary, run.label))
    failed = [r for r in run.results if r.error]
    if failed and not as_json and not quiet:
        worst = failed[0]
        click.echo(f"{len(failed)} episode(s) ended early; first: episode {worst.index} ({worst.end_reason}): "
                   f"{worst.error.splitlines()[0][:200]}", err=True)  # fmt: skip

"""``openenv fork``: duplicate a Hugging Face Space to your account (the hub's duplicate API)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from openenv.cli.hub import call_hub, hub_endpoint, hub_user, need_hub, parse_pairs

try:  # the `hub` extra
    from huggingface_hub import HfApi, login, whoami
except ImportError:  # pragma: no cover - exercised only without the extra
    HfApi = login = whoami = None

__all__ = ["fork"]


def _space_id(value: str, what: str) -> str:
    if value.count("/") != 1 or not all(value.split("/")):
        raise click.BadParameter(f"Invalid {what}: {value!r}. Expected format: 'owner/space-name'")
    return value


@click.command()
@click.argument("source_space")
@click.option("--repo-id", "-r", default=None, help="Target 'user/name' (default: your account, same name).")
@click.option("--private", is_flag=True, help="Create the fork as private.")
@click.option("--set-env", "-e", "set_env", multiple=True, help="Space variable KEY=VALUE (repeatable).")
@click.option("--set-secret", "--secret", "-s", "set_secret", multiple=True,
              help="Space secret KEY=VALUE (repeatable; never printed).")
@click.option("--hardware", "-H", default=None, help="Hardware (default cpu-basic).")
def fork(source_space: str, repo_id: str | None, private: bool, set_env: tuple[str, ...],
         set_secret: tuple[str, ...], hardware: str | None) -> None:
    """Fork (duplicate) the Space SOURCE_SPACE ('owner/space-name') to your account."""
    _space_id(source_space, "source Space ID")
    if repo_id is not None:
        _space_id(repo_id, "--repo-id")
    variables = parse_pairs(set_env, flag="--set-env")
    secrets = parse_pairs(set_secret, flag="--set-secret", secret=True)
    need_hub(HfApi)
    click.echo(f"✓ Authenticated as: {hub_user(whoami, login)}")
    api = HfApi()
    options: dict = {"from_id": source_space, "private": private, "hardware": hardware or "cpu-basic"}
    if variables:
        options["variables"] = [{"key": k, "value": v} for k, v in variables.items()]
    if secrets:
        options["secrets"] = [{"key": k, "value": v} for k, v in secrets.items()]
    if repo_id is not None:
        options["to_id"] = repo_id
    click.echo(f"Forking Space {source_space}...")
    result = call_hub(f"Forking {source_space}", _duplicate(api), **options)
    new_id = getattr(result, "repo_id", None) or str(result).split("/spaces/")[-1].rstrip("/")
    click.echo("✓ Space forked successfully")
    click.echo(f"Space URL: {hub_endpoint()}/spaces/{new_id}")


def _duplicate(api: Any) -> Callable[..., Any]:
    """``duplicate_space`` (huggingface_hub 1.x, what 0.10 calls) or 2.x's ``duplicate_repo`` for a Space."""
    if hasattr(api, "duplicate_space"):
        return api.duplicate_space

    def duplicate(*, hardware: str, variables: Any = None, secrets: Any = None, **options: Any) -> Any:
        return api.duplicate_repo(repo_type="space", space_hardware=hardware, space_variables=variables,
                                  space_secrets=secrets, **options)

    return duplicate

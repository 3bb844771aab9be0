"""``openenv ray``: start, list and stop environment servers on a Ray cluster.

    openenv ray start echo -n 8 --address 127.0.0.1:6379 --cpus 0.5
    openenv ray list --address 127.0.0.1:6379
    openenv ray stop --all --address 127.0.0.1:6379
    openenv ray token ray-0123456789ab --address 10.0.0.5:6379   # the bearer token it requires

The actors are detached (this command's process ends; they keep running until stopped). A node
whose address is not loopback serves only with a bearer token: ``--token`` (or ``OPENENV_TOKEN``)
for all of them, else one minted per env, printed only by ``openenv ray token`` (never in a URL).
"""

from __future__ import annotations

import json

import click

__all__ = ["ray_group"]

_ADDRESS = click.option("--address", envvar="RAY_ADDRESS", default=None,
                        help="The cluster's head host:port (RAY_ADDRESS).")
_PROJECT = click.option("--project", envvar="OPENENV_PROJECT", default=None,
                        help="Project scoping what is listed and stopped (OPENENV_PROJECT).")


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(getattr(exc, "message", str(exc)))


@click.group("ray")
def ray_group() -> None:
    """Environment servers as Ray actors on a Ray cluster."""


@ray_group.command("start")
@click.argument("target")
@click.option("-n", "count", type=click.IntRange(1, 1024), default=1, show_default=True, help="How many.")
@click.option("--cpus", type=float, default=1.0, show_default=True, help="Ray CPUs per env.")
@click.option("--memory", default=None, help="Ray memory per env, e.g. 512m.")
@click.option("--runtime", type=click.Choice(["auto", "process", "docker"]), default="auto", show_default=True)
@click.option("--pack", is_flag=True, help="Do not spread over nodes (Ray's default placement).")
@click.option("--timeout", "timeout_s", type=float, default=120.0, show_default=True,
              help="Seconds until all must be healthy.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per env.")
@click.option("--token", envvar="OPENENV_TOKEN", default=None,
              help="Bearer token the servers require (OPENENV_TOKEN); default: one minted per env where needed.")
@_ADDRESS
@_PROJECT
def start(target: str, count: int, cpus: float, memory: str | None, runtime: str, pack: bool, timeout_s: float,
          as_json: bool, token: str | None, address: str | None, project: str | None) -> None:
    """Start COUNT servers of TARGET (env name, module:app, env directory or image) and print their URLs."""
    from openenv.core.containers.runtime import ProviderError, RayProvider

    try:
        envs = RayProvider(project=project, address=address).start_many(
            target, count, spread=not pack, timeout_s=timeout_s, cpus=cpus, memory=memory, runtime=runtime,
            detached=True, **({"token": token} if token else {}))
    except ProviderError as exc:
        raise _fail(exc) from None
    for env in envs:
        auth = bool(env.headers(env.base_url))
        if as_json:
            click.echo(json.dumps({"runtime_id": env.runtime_id, "base_url": env.base_url,
                                   "node_id": env.node_id, "node_ip": env.node_ip, "token_required": auth}))
        else:
            note = "  (token: openenv ray token " + env.runtime_id + ")" if auth and not token else ""
            click.echo(f"{env.runtime_id}  {env.base_url}  node {env.node_id[:8]} ({env.node_ip}){note}")


@ray_group.command("list")
@_ADDRESS
@_PROJECT
def list_(address: str | None, project: str | None) -> None:
    """List this project's env actors: id, URL, node, status."""
    from openenv.core.containers.runtime import ProviderError, RayProvider

    try:
        found = RayProvider.list_runtimes(project=project, address=address)
    except ProviderError as exc:
        raise _fail(exc) from None
    for info in found:
        node = str(info.extra.get("node_id") or "")[:8]
        click.echo(f"{info.runtime_id}  {info.base_url}  node {node}  {info.status.value}  {info.env_name}")


@ray_group.command("token")
@click.argument("runtime_id")
@_ADDRESS
def token_(runtime_id: str, address: str | None) -> None:
    """Print the bearer token RUNTIME_ID's server requires (nothing when it requires none)."""
    from openenv.core.containers.runtime import ProviderError, RayProvider

    try:
        env = RayProvider.attach(runtime_id, address=address)
    except ProviderError as exc:
        raise _fail(exc) from None
    header = env.headers(env.base_url).get("Authorization", "")
    if header:
        click.echo(header.removeprefix("Bearer "))


@ray_group.command("stop")
@click.argument("runtime_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Stop every env actor of the project.")
@_ADDRESS
@_PROJECT
def stop(runtime_ids: tuple[str, ...], everything: bool, address: str | None, project: str | None) -> None:
    """Stop the given env actors (or --all of the project's)."""
    from openenv.core.containers.runtime import ProviderError, RayProvider

    if not runtime_ids and not everything:
        raise click.UsageError("name the runtime ids to stop, or pass --all")
    try:
        if everything:
            click.echo(f"stopped {RayProvider.cleanup(project=project, address=address)}")
            return
        for rid in runtime_ids:
            RayProvider.attach(rid, address=address).stop_container()
            click.echo(f"stopped {rid}")
    except ProviderError as exc:
        raise _fail(exc) from None

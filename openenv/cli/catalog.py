"""``openenv catalog build|inspect`` and ``openenv discover``: metadata-only catalog snapshots
(0.10's format, ``openenv.discovery``), made from a repository's committed metadata and searched
locally. Nothing is installed, imported or fetched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

__all__ = ["catalog", "discover"]


def _fail(error: Exception) -> None:
    click.echo(f"Catalog error: {error}", err=True)
    sys.exit(1)


@click.group("catalog")
def catalog() -> None:
    """Build and inspect versioned, metadata-only environment catalogs."""


@catalog.command("build")
@click.option("--repository", required=True, type=click.Path(path_type=Path), help="Local Git repository to read.")
@click.option("--repository-uri", required=True, help="Declared GitHub HTTPS clone URI.")
@click.option("--publisher", required=True, help="Explicit catalog publication authority.")
@click.option("--output", required=True, type=click.Path(path_type=Path), help="Destination snapshot JSON.")
@click.option("--revision", default="HEAD", show_default=True, help="Source commit or ref.")
@click.option("--root", default="envs", show_default=True, help="Direct-child environment inventory root.")
@click.option("--namespace", default="openenv", show_default=True, help="Publisher-owned namespace.")
def build(repository: Path, repository_uri: str, publisher: str, output: Path, revision: str, root: str,
          namespace: str) -> None:
    """Build from committed metadata; uncommitted files and candidate code are not used."""
    from openenv.discovery import CatalogError, build_catalog, write_catalog

    try:
        snapshot = build_catalog(repository, repository_uri=repository_uri, publisher=publisher,
                                 namespace=namespace, revision=revision, root=root)
        write_catalog(snapshot, output)
    except CatalogError as exc:
        _fail(exc)
    click.echo(f"{len(snapshot.entries)} records, snapshot {snapshot.digest}, "
               f"complete={str(snapshot.complete).lower()}", err=True)  # fmt: skip
    for issue in snapshot.issues:
        click.echo(f"{issue.severity}: {issue.path}: {issue.message}", err=True)
    if not snapshot.complete:
        sys.exit(1)


@catalog.command("inspect")
@click.argument("identifier")
@click.option("--catalog", "catalog_path", required=True, type=click.Path(path_type=Path),
              help="Complete configured snapshot.")
def inspect(identifier: str, catalog_path: Path) -> None:
    """Print the complete entry IDENTIFIER, without guessing or fetching a URL."""
    from openenv.discovery import CatalogError, load_catalog, resolve_entry

    try:
        entry = resolve_entry(load_catalog(catalog_path), identifier)
    except CatalogError as exc:
        _fail(exc)
    click.echo(entry.model_dump_json(by_alias=True, exclude_none=True, indent=2))


@click.command("discover")
@click.argument("query", default="")
@click.option("--catalog", "catalog_path", required=True, type=click.Path(path_type=Path),
              help="Complete, explicitly configured local snapshot.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--filter", "filters", multiple=True, help="Exact field=value filter.")
@click.option("--json", "as_json", is_flag=True, help="Emit complete ARD entry data.")
def discover(query: str, catalog_path: Path, limit: int, filters: tuple[str, ...], as_json: bool) -> None:
    """Find unfamiliar environments by task (QUERY) before any installation or execution."""
    from openenv.discovery import CatalogError, load_catalog, search_catalog

    chosen: dict[str, str] = {}
    for item in filters:
        key, sep, value = item.partition("=")
        if not sep or not key or key in chosen:
            click.echo("Catalog error: filters must be distinct field=value pairs", err=True)
            sys.exit(1)
        chosen[key] = value
    try:
        snapshot = load_catalog(catalog_path)
        matches = search_catalog(snapshot, query, filters=chosen, limit=limit)
    except CatalogError as exc:
        _fail(exc)
    if as_json:
        results = [{**m.entry.model_dump(by_alias=True, exclude_none=True, mode="json"), "score": m.score}
                   for m in matches]
        click.echo(json.dumps({"results": results, "snapshot": snapshot.digest, "metadataOnly": True}, indent=2,
                              ensure_ascii=False))  # fmt: skip
        return
    for m in matches:
        card = m.entry.data
        click.echo(f"{m.entry.display_name}: {card.description}")
        click.echo(f"  source: {card.source.uri}")
        click.echo(f"  path: {card.source.path}")
        click.echo(f"  revision: {card.source.revision}")
        click.echo(f"  license: {card.license}; artifact: {card.artifact_availability}")
        click.echo(f"  identifier: {m.entry.identifier}")
    click.echo("Metadata only. Execution approval remains a separate decision.")

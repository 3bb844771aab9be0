"""Finding entries in a complete snapshot: a lexical score over authored text, exact filters, and
exact identifier lookup. Nothing is fetched and no environment is contacted."""

from __future__ import annotations

import re

from openenv.discovery.errors import CatalogError
from openenv.discovery.models import (
    CatalogChanges,
    CatalogSnapshot,
    DiscoveryEntry,
    SearchMatch,
    SupersededEntry,
)
from openenv.discovery.snapshot import require_complete

__all__ = ["FILTERS", "compare_catalogs", "resolve_entry", "search_catalog"]

FILTERS = frozenset({"license", "provider", "artifact_availability", "name", "tags", "type"})


def _words(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", text.casefold()))


def _values(entry: DiscoveryEntry, key: str) -> list[str]:
    if key == "provider":
        return [entry.data.source.provider]
    if key == "tags":
        return list(entry.tags)
    if key == "type":
        return [entry.type]
    return [getattr(entry.data, key)]


def search_catalog(snapshot: CatalogSnapshot, query: str, *, filters: dict[str, str] | None = None,
                   limit: int = 20) -> list[SearchMatch]:
    """Entries sharing words with ``query`` (all of them for an empty query), best first.

    The score is the percentage of the query's words found in the entry's name, description,
    tags, capabilities and representative queries; ties go by identifier.
    """
    require_complete(snapshot)
    if not 1 <= limit <= 1000:
        raise CatalogError("limit must be between 1 and 1000")
    if len(query) > 8192:
        raise CatalogError("Query exceeds the metadata query limit")
    chosen = filters or {}
    if unknown := sorted(set(chosen) - FILTERS):
        raise CatalogError(f"Unsupported filter: {', '.join(unknown)}")
    wanted = _words(query)
    found: list[SearchMatch] = []
    for entry in snapshot.entries:
        if any(value not in _values(entry, key) for key, value in chosen.items()):
            continue
        text = " ".join([entry.display_name, entry.data.description, *entry.tags, *entry.capabilities,
                         *entry.representative_queries])
        shared = wanted & _words(text)
        if wanted and not shared:
            continue
        found.append(SearchMatch(entry=entry, score=round(100 * len(shared) / len(wanted)) if wanted else 0))
    found.sort(key=lambda m: (-m.score, m.entry.identifier))
    return found[:limit]


def resolve_entry(snapshot: CatalogSnapshot, identifier: str) -> DiscoveryEntry:
    """The entry with exactly this identifier (no URL is guessed or fetched)."""
    require_complete(snapshot)
    for entry in snapshot.entries:
        if entry.identifier == identifier:
            return entry
    raise CatalogError("Entry not found in the configured catalog snapshot")


def compare_catalogs(previous: CatalogSnapshot, current: CatalogSnapshot) -> CatalogChanges:
    """What a refresh changed, by environment path (same publisher, repository and root only)."""
    require_complete(previous)
    require_complete(current)
    scope = lambda s: (s.publisher, s.source.uri, s.inventory.root)  # noqa: E731
    if scope(previous) != scope(current):
        raise CatalogError("Catalog refresh must preserve publisher and inventory scope")
    old = {e.data.source.path: e for e in previous.entries}
    new = {e.data.source.path: e for e in current.entries}
    both = sorted(old.keys() & new.keys())
    return CatalogChanges(
        added=[new[p] for p in sorted(new.keys() - old.keys())],
        withdrawn=[old[p] for p in sorted(old.keys() - new.keys())],
        superseded=[SupersededEntry(previous=old[p], current=new[p]) for p in both
                    if old[p].identifier != new[p].identifier],
        corrected=[SupersededEntry(previous=old[p], current=new[p]) for p in both
                   if old[p].identifier == new[p].identifier and old[p] != new[p]],
    )

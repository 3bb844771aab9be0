"""Metadata-only environment discovery in the published openenv 0.10's catalog format: build a
snapshot from a repository's committed metadata, read it back, search it, inspect one entry.
Nothing here installs, imports or contacts an environment (``openenv.auto`` does that)."""

from openenv.discovery.errors import CatalogError
from openenv.discovery.models import (
    ENVIRONMENT_MEDIA_TYPE,
    PROFILE_VERSION,
    CatalogChanges,
    CatalogSnapshot,
    DiscoveryEntry,
    EnvironmentCard,
    SearchMatch,
)
from openenv.discovery.producer import build_catalog
from openenv.discovery.search import compare_catalogs, resolve_entry, search_catalog
from openenv.discovery.snapshot import load_catalog, write_catalog

__all__ = [
    "ENVIRONMENT_MEDIA_TYPE",
    "PROFILE_VERSION",
    "CatalogChanges",
    "CatalogError",
    "CatalogSnapshot",
    "DiscoveryEntry",
    "EnvironmentCard",
    "SearchMatch",
    "build_catalog",
    "compare_catalogs",
    "load_catalog",
    "resolve_entry",
    "search_catalog",
    "write_catalog",
]

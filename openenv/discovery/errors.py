"""The one error of catalog production and consumption."""

from __future__ import annotations

__all__ = ["CatalogError"]


class CatalogError(ValueError):
    """A catalog cannot be produced or used without breaking its contract."""
